//! kind's network list, run by our `cnitool` with only our binaries on
//! `CNI_PATH`: `ptp` (`ipMasq` false, `mtu` 1500) with `host-local`, at
//! cniVersion 0.3.1, as kindnet writes it (its `portmap` left out until
//! ours exists). ADD gives the pod its address and point-to-point routes,
//! CHECK is refused at 0.3.1 as libcni refuses it (and passes once the
//! list says 0.4.0), DEL leaves nothing, DEL again succeeds. Needs root.

use serde_json::{json, Value};
use tests::sandbox::{NetDirs, Via};
use tests::{global_addrs, host_link, ip, plugin_bin_dir, NetNs};

fn kindnet(version: &str, ipam_dir: &str) -> Value {
    json!({
        "cniVersion": version,
        "name": "kindnet",
        "plugins": [{
            "type": "ptp",
            "ipMasq": false,
            "ipam": {"type": "host-local", "dataDir": ipam_dir,
                     "routes": [{"dst": "0.0.0.0/0"}],
                     "ranges": [[{"subnet": "10.216.12.0/24"}]]},
            "mtu": 1500
        }]
    })
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn kinds_ptp_and_host_local_list_runs_on_our_plugins_alone() {
    let dirs = NetDirs::new("kind-", vec![plugin_bin_dir()]);
    for (version, check_ok) in [("0.3.1", false), ("0.4.0", true)] {
        let ns = NetNs::create("kind");
        let cid = format!("kind-{}-{version}", std::process::id());
        dirs.reset(&kindnet(version, &dirs.ipam()));

        let add = dirs.run(Via::Cnitool, "add", "kindnet", &ns, &cid, "eth0");
        assert_eq!(add["ok"], true, "ADD at {version}: {add}");
        let result = &add["result"];
        assert_eq!(result["cniVersion"], version);
        assert_eq!(result["ips"][0]["address"], "10.216.12.2/24", "{result}");
        assert_eq!(result["ips"][0]["gateway"], "10.216.12.1");
        let host_end = result["interfaces"][0]["name"]
            .as_str()
            .unwrap()
            .to_string();
        let eth0 = ns.link("eth0").expect("eth0");
        assert_eq!(eth0["mtu"], 1500);
        assert_eq!(global_addrs(&eth0), ["10.216.12.2/24"]);
        let routes = ip(&["-n", ns.name(), "-4", "route", "show"]).stdout_str();
        assert!(
            routes.contains("default via 10.216.12.1 dev eth0")
                && routes.contains("10.216.12.0/24 via 10.216.12.1 dev eth0 src 10.216.12.2"),
            "{routes}"
        );
        let host = host_link(&host_end).expect("the host end");
        assert_eq!(global_addrs(&host), ["10.216.12.1/32"]);
        assert_eq!(dirs.reservations("kindnet").len(), 1);

        let check = dirs.run(Via::Cnitool, "check", "kindnet", &ns, &cid, "eth0");
        assert_eq!(check["ok"], check_ok, "CHECK at {version}: {check}");
        if !check_ok {
            let msg = check["error"]["msg"].as_str().unwrap_or_default();
            assert!(
                msg.contains("does not support the CHECK command"),
                "{check}"
            );
        }
        for _ in 0..2 {
            let del = dirs.run(Via::Cnitool, "del", "kindnet", &ns, &cid, "eth0");
            assert_eq!(del["ok"], true, "DEL at {version}: {del}");
        }
        assert!(ns.link("eth0").is_none());
        assert!(host_link(&host_end).is_none(), "{host_end} is gone");
        assert_eq!(dirs.reservations("kindnet"), Vec::<(String, String)>::new());
    }
}
