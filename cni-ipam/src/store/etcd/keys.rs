//! The key layout under `<prefix>/<network>/` (see the module docs of
//! [`super`]): the names of a node's index, owners, blocks' reservations
//! and the layout before blocks, and the node's index read back.

use std::net::IpAddr;

use super::blocks::{Block, NotABlock};
use super::EtcdStore;
use crate::store::{Skipped, State};

/// Why a key under a node's index is skipped (and named in the result's
/// warnings).
#[derive(Debug, thiserror::Error)]
enum OddKey {
    #[error(transparent)]
    Block(NotABlock),
    #[error("not a borrowed address naming its block")]
    Borrowed,
    #[error("not a last reserved address")]
    LastReserved,
    #[error("not a key of a node's index")]
    Unknown,
}

/// What a node's index (`nodes/<node>/`) lists.
#[derive(Debug, Default)]
pub(super) struct Index {
    pub(super) blocks: Vec<Block>,
    pub(super) borrowed: Vec<(IpAddr, Block)>,
    pub(super) last: Vec<(usize, IpAddr)>,
}

impl Index {
    /// The index's keys; those that are not what their names say are
    /// skipped and named.
    pub(super) fn parse(
        store: &EtcdStore,
        keys: Vec<(String, Vec<u8>)>,
        state: &mut State,
    ) -> Index {
        let prefix = store.node_prefix();
        let mut index = Index::default();
        for (key, value) in keys {
            let name = key.strip_prefix(&prefix).unwrap_or(&key);
            let value = String::from_utf8_lossy(&value);
            let parsed: Result<(), OddKey> = if let Some(b) = name.strip_prefix("blocks/") {
                Block::parse(b, store.sizes)
                    .map(|b| index.blocks.push(b))
                    .map_err(OddKey::Block)
            } else if let Some(ip) = name.strip_prefix("borrowed/") {
                match (ip.parse::<IpAddr>(), Block::parse(&value, store.sizes)) {
                    (Ok(ip), Ok(b)) if b.contains(ip) => {
                        index.borrowed.push((ip, b));
                        Ok(())
                    }
                    _ => Err(OddKey::Borrowed),
                }
            } else if let Some(set) = name.strip_prefix("last_reserved/") {
                match (set.parse::<usize>(), value.parse::<IpAddr>()) {
                    (Ok(set), Ok(ip)) => {
                        index.last.push((set, ip));
                        Ok(())
                    }
                    _ => Err(OddKey::LastReserved),
                }
            } else {
                Err(OddKey::Unknown)
            };
            if let Err(why) = parsed {
                state.skipped.push(Skipped {
                    entry: format!("etcd key {key}"),
                    why: why.to_string(),
                });
            }
        }
        index
    }
}

impl EtcdStore {
    /// `<root>nodes/<node>/`, the node's index (`%` and `/` escaped).
    pub(super) fn node_prefix(&self) -> String {
        node_prefix(&self.root, &self.node)
    }

    pub(super) fn owner_key(&self, b: Block) -> String {
        format!("{}{}", self.owners_prefix(), b.name())
    }

    /// `<root>owners/`, every claimed block's owner.
    pub(super) fn owners_prefix(&self) -> String {
        format!("{}owners/", self.root)
    }

    pub(super) fn block_prefix(&self, b: Block) -> String {
        format!("{}blocks/{}/", self.root, b.name())
    }

    pub(super) fn ip_key(&self, b: Block, ip: IpAddr) -> String {
        format!("{}{ip}", self.block_prefix(b))
    }

    /// `<root>ips/`, the layout before blocks.
    pub(super) fn old_prefix(&self) -> String {
        format!("{}ips/", self.root)
    }

    /// `<root>upgraded`: present once the layout before blocks was found
    /// empty, so that reads stop counting `ips/` ([`EtcdStore::read_counting_old`]).
    pub(super) fn upgraded_key(&self) -> String {
        format!("{}upgraded", self.root)
    }

    /// `<root>old_size`: how many keys the layout before blocks held, and
    /// had moved into blocks, as last recorded ([`OldSize`](super::records::OldSize)).
    pub(super) fn old_size_key(&self) -> String {
        format!("{}old_size", self.root)
    }

    /// `<root>last_reserved/`: where the previous release's nodes last
    /// reserved, one key per range set, rewritten with each reservation
    /// it made.
    pub(super) fn old_last_prefix(&self) -> String {
        format!("{}last_reserved/", self.root)
    }

    pub(super) fn old_key(&self, ip: IpAddr) -> String {
        format!("{}ips/{ip}", self.root)
    }

    pub(super) fn borrowed_key(&self, ip: IpAddr) -> String {
        format!("{}borrowed/{ip}", self.node_prefix())
    }

    pub(super) fn index_key(&self, b: Block) -> String {
        format!("{}blocks/{}", self.node_prefix(), b.name())
    }

    pub(super) fn last_key(&self, set: usize) -> String {
        format!("{}last_reserved/{set}", self.node_prefix())
    }
}

/// `<root>nodes/<node>/`, `%` and `/` of the name escaped.
pub(super) fn node_prefix(root: &str, node: &str) -> String {
    let escaped = node.replace('%', "%25").replace('/', "%2F");
    format!("{root}nodes/{escaped}/")
}
