//! `ipam-etcd`: [`cni_ipam::Ipam`] over the etcd store, so every node of a
//! cluster allocates from the same ranges without handing an address out
//! twice. The `ipam` section is ipam-file's, with
//! `"store": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"]}`.
//!
//! On the node it keeps one small file per network, a hint of the node's
//! blocks under [`cni_ipam::store::etcd::HINT_DIR`] (`/run/cni/ipam-etcd`)
//! that saves an ADD a round trip; etcd alone decides, and the file may
//! be deleted at any time.
//!
//! `ipam-etcd reclaim-node NODE < network.conf` reclaims a dead node's
//! blocks and reservations in that network, from a surviving node
//! ([`cni_ipam::store::etcd::EtcdStore::reclaim_node`]): it prints
//! `{"blocks": N, "reservations": M}`, or a CNI error and exits 1.
#![no_main]

use std::io::{Read, Write};

use cni_ipam::store::etcd::{reclaim_node_of, EtcdStore};
use cni_types::Error;

const ABOUT: &str = "CNI ipam-etcd plugin v0.1.0 (cluster-wide reservations in etcd)";

/// Most bytes of a network configuration read for `reclaim-node`.
const MAX_CONF: u64 = 1 << 20;

/// The plugin, or the `reclaim-node` subcommand when the first argument
/// names it.
fn entry() -> i32 {
    // Read from /proc rather than std::env::args, which a static (musl)
    // build started through plugin_main! does not fill.
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    if args.get(1).map(String::as_str) != Some("reclaim-node") {
        return cni_skel::try_run(
            &cni_ipam::Ipam::<EtcdStore>::new("ipam-etcd"),
            &cni_version::PluginInfo::all(),
            ABOUT,
        );
    }
    let answer = reclaim(args.get(2).map(String::as_str).unwrap_or_default());
    let (bytes, code) = match answer {
        Ok(done) => (serde_json::to_vec(&done).unwrap_or_default(), 0),
        Err(e) => (e.to_json(), 1),
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&bytes).and_then(|()| out.write_all(b"\n"));
    code
}

/// `reclaim-node NODE` with the network configuration on stdin.
fn reclaim(node: &str) -> Result<cni_ipam::store::etcd::Reclaimed, Error> {
    let mut conf = Vec::new();
    std::io::stdin()
        .take(MAX_CONF)
        .read_to_end(&mut conf)
        .map_err(|e| Error::io("read", "stdin", e))?;
    reclaim_node_of(&conf, node)
}

cni_skel::plugin_main!(entry);
