//! The values this store writes: a reservation (`{"containerID",
//! "ifname", "node"}`) and a block's owner (`{"node"}`), byte for byte as
//! a comparison reads them back.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::EtcdStore;
use crate::store::{Owner, Reservation, Skipped};
use cni_types::Attachment;

/// A reservation's value.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Record {
    #[serde(rename = "containerID")]
    pub(super) container_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) ifname: Option<String>,
    pub(super) node: String,
}

/// A block owner's value.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct OwnerRecord {
    pub(super) node: String,
}

/// The value of [`EtcdStore::old_size_key`]: at most how many
/// reservations the layout before blocks holds and has had moved into
/// blocks, as counted by `node`. STATUS trusts it while no node of the
/// previous release reserved since it was written.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct OldSize {
    pub(super) count: u64,
    pub(super) node: String,
}

impl EtcdStore {
    /// The owner value this node writes, byte for byte (a comparison reads
    /// it).
    pub(super) fn owner_value(&self) -> String {
        owner_value(&self.node)
    }

    /// Whether an owner's value names this node.
    pub(super) fn is_mine(&self, owner: &[u8]) -> bool {
        serde_json::from_slice::<OwnerRecord>(owner).is_ok_and(|o| o.node == self.node)
    }

    /// A reservation's value, byte for byte as this store writes it (a
    /// release compares it).
    pub(super) fn value(&self, container_id: &str, ifname: Option<&str>) -> String {
        record_value(container_id, ifname, &self.node)
    }

    pub(super) fn reservation(
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

/// The value of a block owned by `node`, byte for byte.
pub(super) fn owner_value(node: &str) -> String {
    serde_json::to_string(&OwnerRecord {
        node: node.to_owned(),
    })
    .unwrap_or_default()
}

/// A reservation's value, byte for byte as this store writes it.
pub(super) fn record_value(container_id: &str, ifname: Option<&str>, node: &str) -> String {
    serde_json::to_string(&Record {
        container_id: container_id.trim().to_owned(),
        ifname: ifname.map(str::to_owned),
        node: node.to_owned(),
    })
    .unwrap_or_default()
}
