//! Reservations in etcd, shared by every node of a cluster (feature
//! `etcd`).
//!
//! Selected by `"store": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"],
//! "prefix": "/cni-ipam", "node": "node-1"}` in the `ipam` section. Keys,
//! under `<prefix>/<network>/`:
//!
//! - `ips/<address>`: a reservation, `{"containerID", "ifname", "node"}`; one
//!   without `ifname` belongs to the container whatever its interface, as
//!   an older host-local's files do (this store never writes one);
//! - `last_reserved/<range set index>`: the last address handed out from
//!   that set, shared by all nodes, so they walk the range together.
//!
//! **Never twice.** A reservation is written by one transaction that
//! succeeds only if none of its addresses has a key (`create_revision ==
//! 0`), and puts all of them and the last reserved addresses together. A
//! plugin that loses a race reads again and re-plans; a plugin killed at
//! any point has written all of an ADD or nothing, and what it wrote
//! names its attachment, so DEL or GC releases it. A release is a
//! transaction too, deleting a key only while it still holds what was read.
//!
//! **Nodes.** Each reservation records the node (`node`, else the host
//! name). DEL, CHECK, GC and a repeated ADD only see their own node's
//! reservations as held by an attachment; every node's are taken.
//!
//! **Faults.** Each request waits at most [`REQUEST_TIMEOUT`] per endpoint
//! (connect and answer), and endpoints are tried in order: an unreachable
//! etcd is code 11 (try again later) after at most that long per endpoint,
//! naming the endpoints, with nothing written. Only a transaction whose
//! answer was lost (etcd died between applying it and answering) may have
//! been applied although the ADD answered code 11: it names the
//! attachment, so the DEL the runtime "must still" execute after a failed
//! ADD (SPEC-1.0.0, lifecycle) releases it, as does a GC, and a repeated
//! ADD returns that same address.
//!
//! The client is etcd's own v3 JSON gateway (`POST /v3/kv/range`,
//! `/v3/kv/txn`; keys and values in base64) over plain HTTP with a small
//! blocking client: the plugin stays synchronous, and needs no gRPC
//! stack. TLS is not supported.

use std::net::IpAddr;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use cni_types::{Code, Error};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::config::{invalid, EtcdConfig, IpamConfig, StoreConfig};
use crate::plan::{Assigned, Attachment};
use crate::store::{Access, Owner, Reservation, Reserved, Skipped, State, Store};

/// The longest a request waits for one endpoint, connecting and answering.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Most keys released in one transaction (etcd's `--max-txn-ops`, 128 by
/// default, bounds each list of a transaction).
const MAX_TXN_KEYS: usize = 60;

/// Largest answer read from etcd (a /16 fully reserved is ~10 MB).
const MAX_ANSWER: u64 = 256 << 20;

/// One network's reservations in etcd.
#[derive(Debug)]
pub struct EtcdStore {
    client: Client,
    /// `<prefix>/<network>/`.
    root: String,
    node: String,
    /// Whether reads must reflect every write committed before them. An
    /// ADD's first read need not: a stale read can only make its
    /// transaction fail (the address has a key now), never succeed twice.
    /// After a lost race, and for DEL, GC and STATUS, reads are
    /// linearizable.
    linearizable: bool,
}

/// A reservation's value.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    #[serde(rename = "containerID")]
    container_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ifname: Option<String>,
    node: String,
}

impl Store for EtcdStore {
    fn open(cfg: &IpamConfig, access: Access) -> Result<Option<EtcdStore>, Error> {
        let StoreConfig::Etcd(etcd) = &cfg.store else {
            return Err(invalid(
                "ipam.store.type",
                "file",
                "this plugin keeps reservations in etcd: give \"store\": {\"type\": \"etcd\", \"endpoints\": [..]}",
            ));
        };
        Ok(Some(EtcdStore {
            client: Client::new(etcd),
            root: format!("{}/{}/", etcd.prefix, cfg.name),
            node: node_name(etcd)?,
            linearizable: access != Access::Create,
        }))
    }

    fn describe(&self) -> String {
        format!(
            "etcd {} under {}",
            self.client.endpoints.join(","),
            self.root
        )
    }

    fn read(&mut self, sets: usize) -> Result<State, Error> {
        let mut state = State {
            last_reserved: vec![None; sets],
            ..State::default()
        };
        for (key, value) in self
            .client
            .range_prefix(&self.root, false, self.linearizable)?
        {
            let Some(name) = key.strip_prefix(&self.root) else {
                continue;
            };
            if let Some(ip) = name.strip_prefix("ips/") {
                let Ok(ip) = ip.parse::<IpAddr>() else {
                    state.skipped.push(Skipped {
                        entry: format!("etcd key {key}"),
                        why: "not named by an address".to_owned(),
                    });
                    continue;
                };
                state
                    .held
                    .push(self.reservation(ip, &value, &key, &mut state.skipped));
            } else if let Some(set) = name.strip_prefix("last_reserved/") {
                let (Ok(set), Some(ip)) = (
                    set.parse::<usize>(),
                    std::str::from_utf8(&value)
                        .ok()
                        .and_then(|v| v.parse().ok()),
                ) else {
                    state.skipped.push(Skipped {
                        entry: format!("etcd key {key}"),
                        why: "not a last reserved address".to_owned(),
                    });
                    continue;
                };
                if let Some(slot) = state.last_reserved.get_mut(set) {
                    *slot = Some(ip);
                }
            }
        }
        Ok(state)
    }

    fn held_addresses(&mut self) -> Result<Vec<IpAddr>, Error> {
        let ips = format!("{}ips/", self.root);
        Ok(self
            .client
            .range_prefix(&ips, true, true)?
            .into_iter()
            .filter_map(|(key, _)| key.strip_prefix(&ips)?.parse().ok())
            .collect())
    }

    fn reserve(&mut self, new: &[Assigned], attachment: &Attachment) -> Result<Reserved, Error> {
        let Some(first) = new.first() else {
            return Ok(Reserved::Done);
        };
        let value = self.value(&attachment.container_id, Some(&attachment.ifname));
        let compare: Vec<Value> = new
            .iter()
            .map(|a| {
                json!({"key": b64(&self.ip_key(a.ip)), "target": "CREATE",
                       "result": "EQUAL", "create_revision": "0"})
            })
            .collect();
        let mut success: Vec<Value> = new
            .iter()
            .map(|a| json!({"request_put": {"key": b64(&self.ip_key(a.ip)), "value": b64(&value)}}))
            .collect();
        success.extend(new.iter().map(|a| {
            let key = format!("{}last_reserved/{}", self.root, a.set);
            json!({"request_put": {"key": b64(&key), "value": b64(&a.ip.to_string())}})
        }));
        // On failure, the same transaction counts each key, to name the
        // address that was taken without another round trip.
        let count: Vec<Value> = new
            .iter()
            .map(|a| json!({"request_range": {"key": b64(&self.ip_key(a.ip)), "count_only": true}}))
            .collect();
        let Some(counts) = self.client.txn_else(compare, success, count)? else {
            return Ok(Reserved::Done);
        };
        self.linearizable = true;
        // The gateway leaves out a zero count.
        let has_key = |r: &Value| {
            r.pointer("/response_range/count")
                .is_some_and(|c| c.as_str() != Some("0") && !c.is_null())
        };
        let taken = new
            .iter()
            .zip(&counts)
            .find(|(_, r)| has_key(r))
            .map_or(first.ip, |(a, _)| a.ip);
        Ok(Reserved::Taken(taken))
    }

    fn release(&mut self, gone: &[&Reservation]) -> Result<(), Error> {
        // (key, value as read) of each reservation this node may release.
        let owned: Vec<(String, String)> = gone
            .iter()
            .filter(|r| r.local)
            .filter_map(|r| {
                let value = match &r.owner {
                    Owner::Attachment {
                        container_id,
                        ifname,
                    } => self.value(container_id, Some(ifname)),
                    Owner::Container(container_id) => self.value(container_id, None),
                    Owner::Unknown(_) => return None,
                };
                Some((b64(&self.ip_key(r.ip)), b64(&value)))
            })
            .collect();
        // Each key is deleted only while it holds what was read; otherwise
        // someone else holds it now, and it is not ours to release. One
        // transaction for all (a dual-stack DEL, a GC) unless one of them
        // changed meanwhile; then one per key.
        let still = |(key, value): &(String, String)| json!({"key": key, "target": "VALUE", "result": "EQUAL", "value": value});
        let delete = |(key, _): &(String, String)| json!({"request_delete_range": {"key": key}});
        for batch in owned.chunks(MAX_TXN_KEYS) {
            let all_at_once = batch.len() > 1
                && self.client.txn(
                    batch.iter().map(still).collect(),
                    batch.iter().map(delete).collect(),
                )?;
            if !all_at_once {
                for one in batch {
                    self.client.txn(vec![still(one)], vec![delete(one)])?;
                }
            }
        }
        Ok(())
    }
}

impl EtcdStore {
    fn ip_key(&self, ip: IpAddr) -> String {
        format!("{}ips/{ip}", self.root)
    }

    /// A reservation's value, byte for byte as this store writes it (a
    /// release compares it).
    fn value(&self, container_id: &str, ifname: Option<&str>) -> String {
        serde_json::to_string(&Record {
            container_id: container_id.trim().to_owned(),
            ifname: ifname.map(str::to_owned),
            node: self.node.clone(),
        })
        .unwrap_or_default()
    }

    fn reservation(
        &self,
        ip: IpAddr,
        value: &[u8],
        key: &str,
        skipped: &mut Vec<Skipped>,
    ) -> Reservation {
        match serde_json::from_slice::<Record>(value) {
            Ok(record) => Reservation {
                ip,
                local: record.node == self.node,
                owner: match record.ifname {
                    Some(ifname) => Owner::Attachment {
                        container_id: record.container_id,
                        ifname,
                    },
                    None => Owner::Container(record.container_id),
                },
            },
            Err(e) => {
                let why = format!("value is not a reservation ({e})");
                skipped.push(Skipped {
                    entry: format!("etcd key {key}"),
                    why: format!("{why}; its address is taken as held"),
                });
                Reservation {
                    ip,
                    local: false,
                    owner: Owner::Unknown(why),
                }
            }
        }
    }
}

/// `node`, else the host name.
fn node_name(cfg: &EtcdConfig) -> Result<String, Error> {
    if let Some(node) = &cfg.node {
        return Ok(node.clone());
    }
    nix::unistd::gethostname()
        .map_err(|e| {
            Error::new(
                Code::IO_FAILURE,
                "cannot read the host name for ipam.store.node",
            )
            .with_details(e.to_string())
        })?
        .into_string()
        .map_err(|h| {
            Error::new(Code::INVALID_NETWORK_CONFIG, "invalid ipam.store.node").with_details(
                format!("the host name {h:?} is not UTF-8; give ipam.store.node"),
            )
        })
}

fn b64(text: &str) -> String {
    B64.encode(text)
}

/// etcd's v3 JSON gateway.
#[derive(Debug)]
struct Client {
    agent: ureq::Agent,
    endpoints: Vec<String>,
}

impl Client {
    fn new(cfg: &EtcdConfig) -> Client {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            .http_status_as_error(false)
            // etcd is reached directly, never through a proxy from the
            // runtime's environment.
            .proxy(None)
            .build()
            .into();
        Client {
            agent,
            endpoints: cfg.endpoints.clone(),
        }
    }

    /// Every key under `prefix`, with its value unless `keys_only`; from the
    /// member's own state (serializable) unless `linearizable`.
    fn range_prefix(
        &self,
        prefix: &str,
        keys_only: bool,
        linearizable: bool,
    ) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let mut end = prefix.as_bytes().to_vec();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let answer = self.call(
            "/v3/kv/range",
            &json!({"key": b64(prefix), "range_end": B64.encode(&end), "keys_only": keys_only,
                    "serializable": !linearizable}),
        )?;
        let kvs = answer.get("kvs").and_then(Value::as_array);
        let decode = |v: Option<&Value>| -> Vec<u8> {
            v.and_then(Value::as_str)
                .and_then(|s| B64.decode(s).ok())
                .unwrap_or_default()
        };
        Ok(kvs
            .into_iter()
            .flatten()
            .map(|kv| {
                let key = String::from_utf8_lossy(&decode(kv.get("key"))).into_owned();
                (key, decode(kv.get("value")))
            })
            .collect())
    }

    /// A transaction; whether its comparisons held (and `success` ran).
    fn txn(&self, compare: Vec<Value>, success: Vec<Value>) -> Result<bool, Error> {
        self.txn_else(compare, success, Vec::new())
            .map(|failed| failed.is_none())
    }

    /// A transaction that runs `failure` when its comparisons do not hold:
    /// `None` when `success` ran, else the answers to `failure`, in order.
    fn txn_else(
        &self,
        compare: Vec<Value>,
        success: Vec<Value>,
        failure: Vec<Value>,
    ) -> Result<Option<Vec<Value>>, Error> {
        let answer = self.call(
            "/v3/kv/txn",
            &json!({"compare": compare, "success": success, "failure": failure}),
        )?;
        // The gateway leaves out false booleans.
        if answer.get("succeeded").and_then(Value::as_bool) == Some(true) {
            return Ok(None);
        }
        Ok(Some(match answer.get("responses") {
            Some(Value::Array(responses)) => responses.clone(),
            _ => Vec::new(),
        }))
    }

    /// POSTs `body` to the first endpoint that answers. Unreachable, or a
    /// server-side failure (no leader, timeout), is code 11.
    fn call(&self, path: &str, body: &Value) -> Result<Value, Error> {
        let body = body.to_string();
        let mut failures = Vec::new();
        for endpoint in &self.endpoints {
            let url = format!("{endpoint}{path}");
            let sent = self
                .agent
                .post(&url)
                .header("content-type", "application/json")
                .send(body.as_str());
            let mut response = match sent {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{endpoint}: {e}"));
                    continue;
                }
            };
            let status = response.status().as_u16();
            let bytes = response
                .body_mut()
                .with_config()
                .limit(MAX_ANSWER)
                .read_to_vec();
            let bytes = match bytes {
                Ok(b) => b,
                Err(e) => {
                    failures.push(format!("{endpoint}: {e}"));
                    continue;
                }
            };
            let text = String::from_utf8_lossy(&bytes);
            if status == 200 {
                return serde_json::from_slice(&bytes).map_err(|e| {
                    Error::new(
                        Code::INTERNAL,
                        format!("etcd {endpoint}: unreadable answer"),
                    )
                    .with_details(format!("{e}: {text}"))
                });
            }
            if status >= 500 {
                failures.push(format!("{endpoint}: HTTP {status}: {text}"));
                continue;
            }
            return Err(
                Error::new(Code::INTERNAL, format!("etcd {endpoint} refused {path}"))
                    .with_details(format!("HTTP {status}: {text}")),
            );
        }
        Err(Error::new(
            Code::TRY_AGAIN_LATER,
            format!("etcd unreachable at {}", self.endpoints.join(", ")),
        )
        .with_details(failures.join("; ")))
    }
}
