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

use std::io::Read;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use cni_types::{Attachment, Code, Error};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::config::{invalid, EtcdConfig, IpamConfig, StoreConfig};
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

/// How a transaction went.
enum Txn {
    /// Its comparisons held and `success` ran.
    Succeeded,
    /// They did not: `failure` ran.
    Failed(Answer),
}

/// A JSON answer of etcd, and where it came from (for messages).
struct Answer {
    endpoint: String,
    answer: Value,
    /// The answer as text, at most [`MAX_QUOTED`] bytes and the size of
    /// the rest.
    text: String,
}

impl Client {
    fn new(cfg: &EtcdConfig) -> Client {
        let agent = ureq::Agent::config_builder()
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
        let answer = self
            .call(
                "/v3/kv/range",
                &json!({"key": b64(prefix), "range_end": B64.encode(&end), "keys_only": keys_only,
                        "serializable": !linearizable}),
            )?
            .answer;
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

    /// A transaction that runs `failure` when its comparisons do not hold.
    fn txn_else(
        &self,
        compare: Vec<Value>,
        success: Vec<Value>,
        failure: Vec<Value>,
    ) -> Result<Txn, Error> {
        let answer = self.call(
            "/v3/kv/txn",
            &json!({"compare": compare, "success": success, "failure": failure}),
        )?;
        // The gateway leaves out false booleans.
        if answer.answer.get("succeeded").and_then(Value::as_bool) == Some(true) {
            return Ok(Txn::Succeeded);
        }
        Ok(Txn::Failed(answer))
    }

    /// POSTs `body` to the first endpoint that answers, all within
    /// [`REQUEST_TIMEOUT`]. Unreachable, a server-side failure (no leader,
    /// timeout) or an answer that is not etcd's is code 11.
    fn call(&self, path: &str, body: &Value) -> Result<Answer, Error> {
        let body = body.to_string();
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let mut failures = Vec::new();
        for (i, endpoint) in self.endpoints.iter().enumerate() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                failures.push(format!("{endpoint}: not tried, {REQUEST_TIMEOUT:?} spent"));
                continue;
            }
            // An equal share of what is left for each endpoint not tried yet.
            let share = left / (self.endpoints.len() - i) as u32;
            let sent = self
                .agent
                .post(&format!("{endpoint}{path}"))
                .config()
                .timeout_global(Some(share))
                .build()
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
            let mut reader = response.body_mut().with_config().limit(MAX_ANSWER).reader();
            let bytes = match read_bounded(&mut reader, status == 200) {
                Ok(b) => b,
                Err(e) => {
                    failures.push(format!("{endpoint}: {e}"));
                    continue;
                }
            };
            let text = bytes.quote();
            if status == 200 {
                match serde_json::from_slice::<Value>(&bytes.head) {
                    // Every etcd answer has a header (cluster, member,
                    // revision); `{}` or `[]` is something else.
                    Ok(answer) if answer.get("header").is_some_and(Value::is_object) => {
                        return Ok(Answer {
                            endpoint: endpoint.clone(),
                            answer,
                            text,
                        })
                    }
                    Ok(_) => {
                        return Err(not_etcd(
                            endpoint,
                            path,
                            "an answer without a header",
                            &text,
                        ))
                    }
                    Err(e) => {
                        return Err(not_etcd(
                            endpoint,
                            path,
                            &format!("unreadable JSON ({e})"),
                            &text,
                        ))
                    }
                }
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

/// Code 11: `endpoint` answered `path` with something that is not etcd's
/// answer, quoted.
fn not_etcd(endpoint: &str, path: &str, what: &str, text: &str) -> Error {
    Error::new(
        Code::TRY_AGAIN_LATER,
        format!("etcd {endpoint} answered {path} with {what}"),
    )
    .with_details(format!("the server answered: {text}"))
}

/// An answer read: all of it (`whole`) or its first [`MAX_QUOTED`] bytes
/// and its size.
struct Bytes {
    head: Vec<u8>,
    size: u64,
}

impl Bytes {
    /// The answer as text for a message: at most [`MAX_QUOTED`] bytes, then
    /// how many more there were.
    fn quote(&self) -> String {
        let shown = &self.head[..self.head.len().min(MAX_QUOTED)];
        let text = String::from_utf8_lossy(shown);
        match self.size - shown.len() as u64 {
            0 => text.into_owned(),
            more => format!("{text}... ({more} more bytes, {} in all)", self.size),
        }
    }
}

/// Reads an answer: whole when `whole` (bounded by the reader's limit),
/// else its first [`MAX_QUOTED`] bytes, the rest only counted.
fn read_bounded(reader: &mut impl Read, whole: bool) -> std::io::Result<Bytes> {
    let mut head = Vec::new();
    if whole {
        reader.read_to_end(&mut head)?;
        let size = head.len() as u64;
        return Ok(Bytes { head, size });
    }
    reader.take(MAX_QUOTED as u64).read_to_end(&mut head)?;
    // Counted up to the reader's limit; past it (or on a broken
    // connection), what was counted is the size given.
    let (mut rest, mut buf) = (0u64, [0u8; 8192]);
    while let Ok(n @ 1..) = reader.read(&mut buf) {
        rest += n as u64;
    }
    let size = head.len() as u64 + rest;
    Ok(Bytes { head, size })
}
