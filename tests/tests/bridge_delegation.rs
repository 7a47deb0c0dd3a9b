//! Our `bridge` hands STATUS and GC to its IPAM plugin (spec 1.1.0), run
//! by our runtime (`cnitool`) with our `ipam-file`: STATUS answers for the
//! pool, and GC releases the reservations of attachments the runtime no
//! longer lists while keeping the live one. Needs root.

use serde_json::json;
use tests::sandbox::NetDirs;
use tests::{plugin_bin_dir, NetNs};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn status_and_gc_go_to_ipam_and_gc_keeps_only_listed_attachments() {
    let dirs = NetDirs::new("bridge-gc-", vec![plugin_bin_dir()]);
    let br = format!("bg{}", std::process::id() % 1_000_000);
    let net = "bridge-gc";
    dirs.reset(&json!({"cniVersion": "1.1.0", "name": net, "plugins": [
        {"type": "bridge", "bridge": br, "isGateway": true,
         "ipam": {"type": "ipam-file", "dataDir": dirs.ipam(),
                  "ranges": [[{"subnet": "10.216.5.0/24"}]]}}
    ]}));
    let (live, stale) = (NetNs::create("gc-live"), NetNs::create("gc-stale"));
    live.delete_link_on_drop(&br);
    for (ns, cid) in [(&live, "live"), (&stale, "stale")] {
        let add = dirs.cnitool(cid).add(net, &ns.path());
        assert_eq!(add["ok"], true, "{add}");
    }
    assert_eq!(dirs.reservations(net).len(), 2);
    let status = dirs.cnitool("live").status(net);
    assert_eq!(status["ok"], true, "{status}");

    let gc = dirs.cnitool("live").gc(net, &["live/eth0"]);
    assert_eq!(gc["ok"], true, "{gc}");
    let held: Vec<String> = dirs
        .reservations(net)
        .into_iter()
        .map(|(_, owner)| owner)
        .collect();
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(held[0].starts_with("live"), "{held:?}");

    for (ns, cid) in [(&live, "live"), (&stale, "stale")] {
        let del = dirs.cnitool(cid).del(net, &ns.path());
        assert_eq!(del["ok"], true, "{del}");
    }
    assert!(dirs.reservations(net).is_empty());
}
