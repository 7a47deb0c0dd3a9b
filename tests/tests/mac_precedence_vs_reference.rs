//! The MAC address a runtime asks for, from every place it can ask
//! (`CNI_ARGS` `MAC=`, `args.cni.mac`, `runtimeConfig.mac`, tuning's own
//! `mac`), in every combination: our `bridge` and `tuning` put the same
//! address on the container's interface as the reference plugins do, so
//! they follow the same precedence (which differs between the two
//! reference plugins). Runs the plugin binaries directly in a namespace the
//! test creates; needs root.

use serde_json::{json, Value};
use tests::{ip, plugin_bin_dir, reference_plugin_dir, run_plugin, NetNs};

/// The sources, each with its own address: `02:00:00:00:00:0N`.
const SOURCES: [&str; 4] = ["CNI_ARGS", "args.cni", "runtimeConfig", "own"];

fn mac(n: usize) -> String {
    format!("02:16:00:00:00:{:02x}", n + 1)
}

/// The configuration and `CNI_ARGS` for the sources in `mask`.
fn request(plugin: &str, mask: usize, extra: Value) -> (Value, String) {
    let mut conf = json!({"cniVersion": "1.0.0", "name": "macs", "type": plugin});
    conf.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let mut cni_args = "IgnoreUnknown=1".to_owned();
    for (i, source) in SOURCES
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
    {
        match *source {
            "CNI_ARGS" => cni_args.push_str(&format!(";MAC={}", mac(i))),
            "args.cni" => conf["args"] = json!({"cni": {"mac": mac(i)}}),
            "runtimeConfig" => conf["runtimeConfig"] = json!({"mac": mac(i)}),
            _ => conf["mac"] = json!(mac(i)),
        }
    }
    (conf, cni_args)
}

fn run(
    bin: &std::path::Path,
    cmd: &str,
    ns: &NetNs,
    conf: &Value,
    cni_args: &str,
) -> tests::RawOutput {
    let path = ns.path();
    let env = [
        ("CNI_COMMAND", cmd),
        ("CNI_CONTAINERID", "macs"),
        ("CNI_NETNS", path.as_str()),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/usr/lib/cni"),
        ("CNI_ARGS", cni_args),
    ];
    run_plugin(bin, &env, conf.to_string().as_bytes())
}

/// The MAC of `eth0` in `ns`.
fn live_mac(ns: &NetNs) -> String {
    ns.link("eth0")
        .map(|l| l["address"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

/// The MAC on `eth0` after ADD of the reference `plugin`, then after ADD
/// of ours, each undone by its DEL before the next runs.
fn macs_applied(plugin: &str, ns: &NetNs, conf: &Value, cni_args: &str) -> [String; 2] {
    [reference_plugin_dir(), plugin_bin_dir()].map(|dir| {
        let bin = dir.join(plugin);
        let add = run(&bin, "ADD", ns, conf, cni_args);
        assert!(add.success(), "{} {conf}: {add:?}", bin.display());
        let mac = live_mac(ns);
        assert!(run(&bin, "DEL", ns, conf, cni_args).success());
        mac
    })
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn tuning_applies_the_mac_the_reference_tuning_applies() {
    let ns = NetNs::create("mac-tuning");
    assert!(ip(&[
        "-n",
        ns.name(),
        "link",
        "add",
        "eth0",
        "type",
        "veth",
        "peer",
        "name",
        "p0"
    ])
    .success());
    let data = tempfile::tempdir().unwrap();
    for mask in 0..16 {
        let prev =
            json!({"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "sandbox": ns.path()}]});
        let (conf, cni_args) = request(
            "tuning",
            mask,
            json!({"dataDir": data.path(), "prevResult": prev}),
        );
        let seen = macs_applied("tuning", &ns, &conf, &cni_args);
        assert_eq!(seen[0], seen[1], "sources {mask:04b}: reference, then ours");
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn bridge_applies_the_mac_the_reference_bridge_applies() {
    let ns = NetNs::create("mac-bridge");
    let br = format!("bm{}", std::process::id() % 1_000_000);
    ns.delete_link_on_drop(&br);
    // The bridge has no `mac` key of its own: three sources.
    for mask in 0..8 {
        let (conf, cni_args) = request("bridge", mask, json!({"bridge": br}));
        let seen = macs_applied("bridge", &ns, &conf, &cni_args);
        if mask != 0 {
            assert_eq!(seen[0], seen[1], "sources {mask:03b}: reference, then ours");
        }
    }
}
