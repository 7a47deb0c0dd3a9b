//! Reclaiming a dead node's blocks and reservations: an explicit
//! operation run from a surviving node (`ipam-etcd reclaim-node NODE`),
//! never guessed from a node's silence.

use std::net::IpAddr;

use cni_types::{Error, NetConf};
use serde::Serialize;

use super::blocks::Block;
use super::keys::node_prefix;
use super::records::{owner_value, Record};
use super::txn::{Compare, Op, Read, Txn};
use super::{EtcdStore, MAX_TXN_KEYS};
use crate::config::IpamConfig;
use crate::store::{Access, Store};

/// What [`EtcdStore::reclaim_node`] released.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Reclaimed {
    /// Blocks given back.
    pub blocks: usize,
    /// Reservations released.
    pub reservations: usize,
}

/// `ipam-etcd reclaim-node NODE`: reclaims the dead node `dead` in the
/// network of the configuration `conf` (the plugin's stdin), with the
/// store's keys and ranges of its `ipam` section.
pub fn reclaim_node_of(conf: &[u8], dead: &str) -> Result<Reclaimed, Error> {
    let conf: NetConf = NetConf::from_json(conf)?;
    let cfg = IpamConfig::from_conf(&conf)?;
    let store_cfg = EtcdStore::config(IpamConfig::section(&conf)?)?;
    let Some(mut store) = EtcdStore::open(&cfg.name, &store_cfg, Access::Change)? else {
        return Ok(Reclaimed::default());
    };
    store.use_ranges(&cfg.range_sets)?;
    store.reclaim_node(dead)
}

impl EtcdStore {
    /// Releases every reservation node `dead` wrote (in blocks, borrowed,
    /// and in the layout before blocks), gives back its blocks and removes
    /// its index: what a GC of that node would do if it could run, with an
    /// empty list of valid attachments. Only for a node that is gone for
    /// good: its containers' addresses are handed out again. Each key is
    /// deleted only while it holds what was read, so running it again
    /// after an interruption finishes the work; reservations of other nodes
    /// in its blocks stay, and the blocks holding them become free to
    /// claim with them taken.
    ///
    /// Refuses (code 7) to reclaim the node this store runs as.
    pub fn reclaim_node(&mut self, dead: &str) -> Result<Reclaimed, Error> {
        if dead == self.node || dead.is_empty() {
            return Err(Error::invalid_config(
                "node",
                format!("{dead:?} is this node (or empty): a node reclaims another, dead one"),
            ));
        }
        let mut done = Reclaimed::default();
        let prefix = node_prefix(&self.root, dead);
        let old = format!("{}ips/", self.root);
        let [index, old_count] =
            self.read_all([Read::prefix(&prefix), Read::prefix(&old).count()])?;
        // (key, value) of each reservation of the dead node, to delete.
        let mut gone: Vec<(String, String)> = Vec::new();
        let mut blocks = Vec::new();
        for (key, value) in index.kvs {
            let name = key.strip_prefix(&prefix).unwrap_or(&key);
            if let Some(b) = name.strip_prefix("blocks/") {
                if let Ok(b) = Block::parse(b, self.sizes) {
                    blocks.push(b);
                }
            } else if let Some(ip) = name.strip_prefix("borrowed/") {
                let b = Block::parse(&String::from_utf8_lossy(&value), self.sizes);
                if let (Ok(ip), Ok(b)) = (ip.parse::<IpAddr>(), b) {
                    gone.extend(self.written_by(dead, &[self.ip_key(b, ip)])?);
                }
            }
        }
        for b in &blocks {
            let keys: Vec<String> = self.client.keys_under(&self.block_prefix(*b))?;
            gone.extend(self.written_by(dead, &keys)?);
        }
        if old_count.count > 0 {
            let keys: Vec<String> = self.client.keys_under(&old)?;
            gone.extend(self.written_by(dead, &keys)?);
        }
        for (key, value) in &gone {
            let txn = Txn::new(vec![Compare::holds(key, value)], vec![Op::delete(key)]);
            done.reservations += usize::from(self.client.txn(&txn)?.succeeded);
        }
        for b in &blocks {
            let txn = Txn::new(
                vec![Compare::holds(&self.owner_key(*b), &owner_value(dead))],
                vec![Op::delete(&self.owner_key(*b))],
            );
            done.blocks += usize::from(self.client.txn(&txn)?.succeeded);
        }
        // Last, so that an interrupted run is found again by its index.
        (self.client).txn(&Txn::new(Vec::new(), vec![Op::DeletePrefix(prefix)]))?;
        Ok(done)
    }

    /// Those of `keys` that hold a reservation written by `dead`, with
    /// their values.
    fn written_by(&self, dead: &str, keys: &[String]) -> Result<Vec<(String, String)>, Error> {
        let mut out = Vec::new();
        for chunk in keys.chunks(MAX_TXN_KEYS) {
            let reads = chunk.iter().map(|k| Read::key(k)).collect();
            for range in self.read_txn(reads)? {
                for (key, value) in range.kvs {
                    if serde_json::from_slice::<Record>(&value).is_ok_and(|r| r.node == dead) {
                        out.push((key, String::from_utf8_lossy(&value).into_owned()));
                    }
                }
            }
        }
        Ok(out)
    }
}
