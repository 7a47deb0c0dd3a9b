//! GC of our `ptp` with `ipMasq`, as a process with our `host-local` (the
//! reference's stops at 1.0.0, before GC): the masquerading of the
//! attachments `cni.dev/valid-attachments` does not list goes, the
//! listed one's stays, and no list at all removes nothing. The plugin
//! runs inside a "host" namespace of the test (`ip netns exec`), so its
//! rules, links and routes never touch the machine's. Needs root.

use std::process::Command;

use serde_json::{json, Value};
use tests::{output_of, plugin_bin_dir, NetNs, RawOutput};

/// Runs our `ptp` inside `host` with `command` for `cid`.
fn ptp(host: &NetNs, command: &str, cid: &str, netns: &str, conf: &Value) -> RawOutput {
    let bin = plugin_bin_dir();
    let mut ptp = Command::new("ip");
    ptp.args(["netns", "exec", host.name()])
        .arg(bin.join("ptp"))
        .env_clear()
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", cid)
        .env("CNI_NETNS", netns)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", &bin)
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    output_of(&mut ptp, conf.to_string().as_bytes())
}

/// The comments of the host namespace's masquerading rules.
fn masquerade_comments(host: &NetNs) -> Vec<String> {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            host.name(),
            "nft",
            "-j",
            "list",
            "chain",
            "inet",
        ])
        .args(["cni_plugins_masquerade", "masq_checks"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap_or(json!({}));
    let mut comments: Vec<String> = listed["nftables"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["rule"]["comment"].as_str().map(str::to_string))
        .collect();
    comments.sort();
    comments
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn gc_removes_the_masquerading_of_attachments_not_listed_and_nothing_without_a_list() {
    let host = NetNs::create("ptpgc-host");
    let pods = [NetNs::create("ptpgc-a"), NetNs::create("ptpgc-b")];
    let data = tempfile::tempdir().unwrap();
    let conf = json!({"cniVersion": "1.1.0", "name": "gcnet", "type": "ptp",
        "ipMasq": true, "ipMasqBackend": "nftables",
        "ipam": {"type": "host-local", "dataDir": data.path(),
                 "ranges": [[{"subnet": "10.216.14.0/24"}]]}});
    for (pod, cid) in pods.iter().zip(["gc-a", "gc-b"]) {
        let add = ptp(&host, "ADD", cid, &pod.path(), &conf);
        assert!(add.success(), "{add:?}");
    }
    assert_eq!(masquerade_comments(&host).len(), 2);

    let gc = |valid: Option<Value>| {
        let mut c = conf.clone();
        if let Some(list) = valid {
            c["cni.dev/valid-attachments"] = list;
        }
        let out = ptp(&host, "GC", "", "", &c);
        assert!(out.success(), "{out:?}");
    };
    gc(None);
    assert_eq!(
        masquerade_comments(&host).len(),
        2,
        "no list, nothing removed"
    );
    gc(Some(json!([{"containerID": "gc-a", "ifname": "eth0"}])));
    let left = masquerade_comments(&host);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].ends_with("id: gc-a"), "{left:?}");
}
