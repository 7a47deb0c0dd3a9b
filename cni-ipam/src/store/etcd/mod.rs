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
//! **Faults.** Each request to etcd has one deadline, [`REQUEST_TIMEOUT`],
//! across all endpoints: they are tried in order, each given an equal share
//! of the time left (an endpoint that refuses at once leaves its share to
//! the next). An unreachable etcd is code 11 (try again later) within that
//! time, naming the endpoints, with nothing written. An answer that is not
//! etcd's (no `header`, a failed transaction naming no taken address) is
//! code 11 quoting it, never read as a lost race. What etcd answers is
//! quoted in errors up to [`MAX_QUOTED`] bytes, with the size of the rest. Only a transaction whose
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

mod client;
mod config;

use std::net::IpAddr;
use std::time::Duration;

use cni_types::{Attachment, Code, Error, Extra};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use self::client::{b64, not_etcd, Client, Txn};
pub use self::config::{EtcdConfig, DEFAULT_PREFIX};
use crate::store::{Access, Assigned, Owner, Reservation, Reserved, Skipped, State, Store};

/// The longest one request to etcd takes, connecting and answering,
/// across all the endpoints it tries.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Most bytes of an answer quoted in an error; the rest is counted.
pub const MAX_QUOTED: usize = 4096;

/// Most keys released in one transaction (etcd's `--max-txn-ops`, 128 by
/// default, bounds each list of a transaction).
const MAX_TXN_KEYS: usize = 60;

/// Largest answer read from etcd (a /16 fully reserved is ~10 MB).
pub(crate) const MAX_ANSWER: u64 = 256 << 20;

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
    type Config = EtcdConfig;

    fn config(ipam: &Extra) -> Result<EtcdConfig, Error> {
        EtcdConfig::from_section(ipam)
    }

    fn open(network: &str, cfg: &EtcdConfig, access: Access) -> Result<Option<EtcdStore>, Error> {
        Ok(Some(EtcdStore {
            client: Client::new(cfg),
            root: format!("{}/{network}/", cfg.prefix),
            node: node_name(cfg)?,
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
        let failed = match self.client.txn_else(compare, success, count)? {
            Txn::Succeeded => return Ok(Reserved::Done),
            Txn::Failed(failed) => failed,
        };
        self.linearizable = true;
        // The gateway leaves out a zero count.
        let has_key = |r: &Value| {
            r.pointer("/response_range/count")
                .is_some_and(|c| c.as_str() != Some("0") && !c.is_null())
        };
        let responses = match failed.answer.get("responses") {
            Some(Value::Array(responses)) => responses.as_slice(),
            _ => &[],
        };
        match new.iter().zip(responses).find(|(_, r)| has_key(r)) {
            Some((a, _)) => Ok(Reserved::Taken(a.ip)),
            // A comparison failed, yet none of the keys exists: not what
            // etcd answers. Re-planning would only repeat it.
            None => Err(not_etcd(
                &failed.endpoint,
                "/v3/kv/txn",
                &format!(
                    "a failed reservation of {} that names no taken address",
                    first.ip
                ),
                &failed.text,
            )),
        }
    }

    fn release(&mut self, gone: &[&Reservation]) -> Result<(), Error> {
        // (key, value as read) of each reservation this node may release.
        let owned: Vec<(String, String)> = gone
            .iter()
            .filter(|r| r.local)
            .filter_map(|r| {
                let value = match &r.owner {
                    Owner::Attachment(a) => self.value(&a.container_id, Some(&a.ifname)),
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
                && matches!(
                    self.client.txn_else(
                        batch.iter().map(still).collect(),
                        batch.iter().map(delete).collect(),
                        Vec::new(),
                    )?,
                    Txn::Succeeded
                );
            if !all_at_once {
                for one in batch {
                    self.client
                        .txn_else(vec![still(one)], vec![delete(one)], Vec::new())?;
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
                    Some(ifname) => Owner::Attachment(Attachment {
                        container_id: record.container_id,
                        ifname,
                    }),
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
            Error::invalid_config(
                "ipam.store.node",
                format!("the host name {h:?} is not UTF-8; give ipam.store.node"),
            )
        })
}
