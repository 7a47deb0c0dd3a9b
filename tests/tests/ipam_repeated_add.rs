//! A repeated ADD of a live attachment that fails never releases the live
//! attachment's address.
//!
//! An interface plugin cleans up after a failed ADD by running its IPAM
//! DEL (`cni_invoke::add_with_cleanup`, the guide's pattern). If the IPAM
//! plugin answered a repeated ADD with the address held, a repeated ADD
//! failing afterwards (its interface exists) would release the live
//! attachment's reservation. `ipam-file` refuses the repeat (code 104, as
//! host-local refuses it), so the cleanup never runs. Each case: a live
//! attachment, a repeated ADD that fails, then CHECK of the live one passes
//! and its reservation is still on disk.
//!
//! The `veth` and `bridge` cases run the plugins as processes in a
//! namespace of their own and need root; the guide's pattern runs the
//! `delegator` sample in-process.

use cni_skel::TestRequest;
use plugins_sample::delegator::Delegator;
use serde_json::{json, Value};
use tests::StdoutJson;
use tests::{plugin_bin_dir, run_plugin, NetNs, RawOutput};

const NETWORK: &str = "repeated-add";

/// A data directory for ipam-file, and the configuration using it.
struct Case {
    data: tempfile::TempDir,
    conf: Value,
}

impl Case {
    /// `plugin` (its own keys in `fields`) over ipam-file with `subnet`.
    fn new(plugin: &str, fields: Value, subnet: &str) -> Case {
        let data = tempfile::Builder::new()
            .prefix("ipam-repeated-add-")
            .tempdir()
            .expect("creating a temporary directory");
        let mut conf = json!({"cniVersion": "1.1.0", "name": NETWORK, "type": plugin,
            "ipam": {"type": "ipam-file", "dataDir": data.path(),
                     "ranges": [[{"subnet": subnet}]]}});
        if let (Some(conf), Value::Object(fields)) = (conf.as_object_mut(), fields) {
            conf.extend(fields);
        }
        Case { data, conf }
    }

    /// The configuration, with `prevResult` when given.
    fn stdin(&self, prev: Option<&Value>) -> Vec<u8> {
        let mut conf = self.conf.clone();
        if let Some(prev) = prev {
            conf["prevResult"] = prev.clone();
        }
        serde_json::to_vec(&conf).expect("JSON")
    }

    /// The reservation files of the network: `(address, owner)`.
    fn reservations(&self) -> Vec<(String, String)> {
        let dir = self.data.path().join(NETWORK);
        let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
                    .map(|n| {
                        let owner =
                            std::fs::read_to_string(self.data.path().join(NETWORK).join(&n))
                                .unwrap_or_default();
                        (n, owner)
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }
}

/// The plugin binary `name` run for container `cid`, interface eth0 in `ns`.
fn run(name: &str, command: &str, ns: &str, cid: &str, stdin: &[u8]) -> RawOutput {
    let bins = plugin_bin_dir();
    let path = bins.display().to_string();
    run_plugin(
        &bins.join(name),
        &[
            ("CNI_COMMAND", command),
            ("CNI_CONTAINERID", cid),
            ("CNI_NETNS", ns),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", &path),
        ],
        stdin,
    )
}

/// ADD in `ns`, a repeated ADD that fails (in `again`: a container
/// restarted in a new namespace under the same id, whose host-side link
/// name is taken, or in `ns` itself), CHECK of the first, through the
/// plugin binary `name`; then DEL.
fn live_attachment_survives_a_failed_repeated_add(
    name: &str,
    case: &Case,
    ns: &NetNs,
    again: &NetNs,
    cid: &str,
) {
    let first = run(name, "ADD", &ns.path(), cid, &case.stdin(None));
    assert!(first.success(), "{name}: {first:?}");
    let prev = first.stdout_json();
    let held = case.reservations();
    assert_eq!(held.len(), 1, "{name}: {held:?}");
    assert_eq!(held[0].1, format!("{cid}\r\neth0"), "{name}");

    let repeated = run(name, "ADD", &again.path(), cid, &case.stdin(None));
    assert!(
        !repeated.success(),
        "{name}: the repeated ADD succeeded: {repeated:?}"
    );

    assert_eq!(case.reservations(), held, "{name}: {repeated:?}");
    let check = run(name, "CHECK", &ns.path(), cid, &case.stdin(Some(&prev)));
    assert!(
        check.success(),
        "{name}: CHECK after {repeated:?}: {check:?}"
    );

    let del = run(name, "DEL", &ns.path(), cid, &case.stdin(Some(&prev)));
    assert!(del.success(), "{name}: {del:?}");
    assert!(case.reservations().is_empty(), "{name}");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn veth_a_failed_repeated_add_keeps_the_live_attachments_address() {
    let (ns, again) = (NetNs::create("rep-veth"), NetNs::create("rep-veth-2"));
    let cid = format!("rep-veth-{}", std::process::id());
    ns.delete_link_on_drop(&plugins_sample::veth::host_veth_name(&cid, "eth0"));
    let case = Case::new("veth", json!({}), "10.217.1.0/24");
    live_attachment_survives_a_failed_repeated_add("veth", &case, &ns, &again, &cid);
    live_attachment_survives_a_failed_repeated_add("veth", &case, &ns, &ns, &cid);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn bridge_a_failed_repeated_add_keeps_the_live_attachments_address() {
    let (ns, again) = (NetNs::create("rep-br"), NetNs::create("rep-br-2"));
    let cid = format!("rep-br-{}", std::process::id());
    let br = format!("rb{}", std::process::id() % 1_000_000);
    ns.delete_link_on_drop(&br);
    ns.delete_link_on_drop(&plugins_sample::veth::host_veth_name(&cid, "eth0"));
    let case = Case::new(
        "bridge",
        json!({"bridge": br, "isGateway": true}),
        "10.217.2.0/24",
    );
    live_attachment_survives_a_failed_repeated_add("bridge", &case, &ns, &again, &cid);
    live_attachment_survives_a_failed_repeated_add("bridge", &case, &ns, &ns, &cid);
}

/// The guide's pattern: `delegator` (in-process) runs ipam-file through
/// `add_with_cleanup`. The repeated ADD asks for an IPv6 address ipam-file
/// cannot give, so the step after IPAM fails, as an existing interface
/// makes it fail in an interface plugin.
#[test]
fn the_guides_pattern_a_failed_repeated_add_keeps_the_live_attachments_address() {
    let live = Case::new("delegator", json!({}), "10.217.3.0/24");
    let mut repeat = live.conf.clone();
    repeat["requireFamilies"] = json!(["6"]);
    let bins = plugin_bin_dir();
    let run = |command: &str, stdin: &Value| {
        TestRequest::new(command)
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/var/run/netns/none")
            .env("CNI_IFNAME", "eth0")
            .env("CNI_PATH", bins.as_path())
            .stdin(stdin.to_string().as_str())
            .run(&Delegator, &cni_version::PluginInfo::all())
    };
    let first = run("ADD", &live.conf);
    assert_eq!(first.exit_code, 0, "{first:?}");
    let held = live.reservations();
    assert_eq!(held, [("10.217.3.2".to_owned(), "c1\r\neth0".to_owned())]);

    let repeated = run("ADD", &repeat);
    assert_ne!(repeated.exit_code, 0, "{repeated:?}");
    assert_eq!(live.reservations(), held, "{repeated:?}");
    let check = run("CHECK", &live.conf);
    assert_eq!(check.exit_code, 0, "CHECK after {repeated:?}: {check:?}");
    assert_eq!(run("DEL", &live.conf).exit_code, 0);
    assert!(live.reservations().is_empty());
}
