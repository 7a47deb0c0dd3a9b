//! The `dns-mac` sample plugin chained after an interface plugin, driven by
//! the reference runtime library (`libcni`, through `cnidriver`) exactly as
//! a container runtime would: capability arguments become `runtimeConfig`,
//! the previous plugin's result becomes `prevResult`, the result is cached
//! and handed back for CHECK and DEL.
//!
//! The interface plugin is our `noop`, told by its debug file to report a
//! fixed result with a host-side veth and the container's `eth0` in the
//! namespace the runtime passed.

use std::path::PathBuf;

use serde_json::{json, Value};
use tests::{plugin_bin_dir, write_json, Driver, FAKE_NETNS};

const RUNTIME_MAC: &str = "c2:11:22:33:44:55";

/// A temporary directory with the conflist, the noop's debug file and
/// libcni's cache; plugins are found in the sample plugins' build directory.
struct Chain {
    dir: tempfile::TempDir,
}

impl Chain {
    /// A list of version `v`: [noop reporting [`interface_result`], dns-mac
    /// with `dns_mac` merged into its configuration].
    fn new(v: &str, dns_mac: Value) -> Chain {
        let dir = tempfile::Builder::new()
            .prefix("dns-mac-chain-")
            .tempdir()
            .expect("creating a temporary directory");
        let chain = Chain { dir };
        write_json(
            &chain.path("noop.json"),
            &json!({"ReportResult": interface_result(v).to_string()}),
        );
        let mut plugin = json!({"type": "dns-mac"});
        plugin
            .as_object_mut()
            .unwrap()
            .extend(dns_mac.as_object().expect("an object").clone());
        write_json(
            &chain.conflist(),
            &json!({
                "cniVersion": v,
                "name": "macnet",
                "plugins": [
                    {"type": "noop", "debugFile": chain.path("noop.json")},
                    plugin
                ]
            }),
        );
        chain
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn conflist(&self) -> PathBuf {
        self.path("macnet.conflist")
    }

    fn driver(&self) -> Driver {
        Driver::new([plugin_bin_dir()], self.path("cache"))
    }
}

/// What the interface plugin reports in version `v`: a host veth, the
/// container's `eth0` in [`FAKE_NETNS`] (the netns the driver passes), an
/// address on eth0 and some DNS.
fn interface_result(v: &str) -> Value {
    let mut r = json!({
        "cniVersion": v,
        "interfaces": [
            {"name": "veth1234", "mac": "aa:aa:aa:aa:aa:aa"},
            {"name": "eth0", "mac": "00:11:22:33:44:55", "sandbox": FAKE_NETNS}
        ],
        "ips": [{"interface": 1, "address": "10.1.2.3/24", "gateway": "10.1.2.1"}],
        "dns": {"nameservers": ["8.8.8.8"], "search": ["example.com"]}
    });
    if v.starts_with("0.") {
        r["ips"][0]["version"] = json!("4");
    }
    r
}

/// The chained plugin's configuration: the `mac` capability and a `dns`
/// section.
fn dns_mac_config() -> Value {
    json!({
        "capabilities": {"mac": true},
        "dns": {"nameservers": ["10.0.0.53"], "search": ["svc.local"], "options": ["ndots:2"]}
    })
}

/// [`interface_result`] after dns-mac: eth0 has `mac`, the configured DNS
/// is appended to the interface plugin's.
fn expected_result(v: &str, mac: &str) -> Value {
    let mut r = interface_result(v);
    r["interfaces"][1]["mac"] = json!(mac);
    r["dns"] = json!({
        "nameservers": ["8.8.8.8", "10.0.0.53"],
        "search": ["example.com", "svc.local"],
        "options": ["ndots:2"]
    });
    r
}

/// ADD returns the interface plugin's result with the runtime's MAC on the
/// container's eth0 (not on the host veth) and the DNS merged; it is cached
/// as such; CHECK (given that cached result) passes; DEL succeeds, and
/// succeeds again when repeated.
#[test]
fn runtime_mac_and_dns_reach_the_result_and_check_del_succeed() {
    for v in ["0.4.0", "1.0.0"] {
        let chain = Chain::new(v, dns_mac_config());
        let drv = chain.driver().with_cap_args(json!({"mac": RUNTIME_MAC}));
        let list = chain.conflist();
        let expected = expected_result(v, RUNTIME_MAC);

        let add = drv.add(&list);
        assert_eq!(add["ok"], true, "{v}: {add}");
        assert_eq!(add["result"], expected, "{v}");
        assert_eq!(add["cachedResult"], expected, "{v}");

        let check = drv.check(&list);
        assert_eq!(check["ok"], true, "{v}: {check}");

        for round in ["first", "second"] {
            let del = drv.del(&list);
            assert_eq!(del["ok"], true, "{v} {round} DEL: {del}");
            assert_eq!(del["cachedResult"], Value::Null, "{v} {round} DEL");
        }
    }
}

/// The same through one ADD / CHECK / DEL sequence with the MAC given in
/// upper case and dashes: the result carries it normalised.
#[test]
fn runtime_mac_is_normalised_to_lower_case_colons() {
    let chain = Chain::new("1.0.0", dns_mac_config());
    let report = chain
        .driver()
        .with_cap_args(json!({"mac": "C2-11-22-33-44-55"}))
        .add_check_del(&chain.conflist());
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(
        report["add"]["result"],
        expected_result("1.0.0", RUNTIME_MAC)
    );
    assert_eq!(report["check"], json!({"ok": true}));
}

/// The runtime's MAC wins over the static `mac` key; without capability
/// arguments the static one is used; without either the interface keeps
/// its MAC and only DNS changes.
#[test]
fn static_mac_is_used_only_when_the_runtime_gives_none() {
    let mut config = dns_mac_config();
    config["mac"] = json!("c2:00:00:00:00:09");
    let chain = Chain::new("1.0.0", config);
    let with_caps = chain
        .driver()
        .with_cap_args(json!({"mac": RUNTIME_MAC}))
        .add_check_del(&chain.conflist());
    assert_eq!(with_caps["ok"], true, "{with_caps}");
    assert_eq!(
        with_caps["add"]["result"],
        expected_result("1.0.0", RUNTIME_MAC)
    );
    let without_caps = chain.driver().add_check_del(&chain.conflist());
    assert_eq!(without_caps["ok"], true, "{without_caps}");
    assert_eq!(
        without_caps["add"]["result"],
        expected_result("1.0.0", "c2:00:00:00:00:09")
    );

    let chain = Chain::new("1.0.0", dns_mac_config());
    let neither = chain.driver().add_check_del(&chain.conflist());
    assert_eq!(neither["ok"], true, "{neither}");
    assert_eq!(
        neither["add"]["result"],
        expected_result("1.0.0", "00:11:22:33:44:55")
    );
}

/// A bad static `mac` (and no `mac` capability, so libcni does not inject
/// the runtime's) fails ADD with code 7 naming the field; the runtime sees
/// the plugin's message and details; nothing is cached and the cleanup
/// DEL succeeds.
#[test]
fn bad_static_mac_fails_add_with_code_7() {
    let chain = Chain::new(
        "1.0.0",
        json!({"mac": "zz", "dns": {"nameservers": ["10.0.0.53"]}}),
    );
    let report = chain
        .driver()
        .with_cap_args(json!({"mac": RUNTIME_MAC}))
        .add_check_del(&chain.conflist());
    assert_eq!(
        report["add"],
        json!({"ok": false, "error": {
            "code": 7,
            "msg": "invalid MAC address in mac",
            "details": "\"zz\": not a unicast MAC address",
            "text": "plugin type=\"dns-mac\" failed (add): invalid MAC address in mac; \"zz\": not a unicast MAC address"
        }}),
        "{report}"
    );
    assert_eq!(report["cachedAfterAdd"], Value::Null);
    assert_eq!(
        report["check"],
        json!({"ok": true, "skipped": "add failed"})
    );
    assert_eq!(report["del"], json!({"ok": true}));
}

/// CHECK fails (code 100, the plugin's own) when the cached result lacks
/// the change: here the runtime's MAC changed between ADD and CHECK.
#[test]
fn check_fails_when_the_interface_lacks_the_mac() {
    let chain = Chain::new("1.0.0", dns_mac_config());
    let list = chain.conflist();
    let add = chain
        .driver()
        .with_cap_args(json!({"mac": RUNTIME_MAC}))
        .add(&list);
    assert_eq!(add["ok"], true, "{add}");
    let check = chain
        .driver()
        .with_cap_args(json!({"mac": "c2:99:99:99:99:99"}))
        .check(&list);
    assert_eq!(
        check["error"],
        json!({
            "code": 100,
            "msg": "container interface does not have the configured MAC",
            "details": format!("want c2:99:99:99:99:99, prevResult has \"{RUNTIME_MAC}\""),
            "text": format!("container interface does not have the configured MAC; want c2:99:99:99:99:99, prevResult has \"{RUNTIME_MAC}\"")
        }),
        "{check}"
    );
}

/// The MAC goes to `CNI_IFNAME` *in `CNI_NETNS`*: a host-side interface
/// (no `sandbox`) that happens to share the name, listed first, is left
/// alone.
#[test]
fn mac_goes_to_the_interface_in_the_container_not_a_host_namesake() {
    let chain = Chain::new("1.0.0", dns_mac_config());
    let mut reported = interface_result("1.0.0");
    reported["interfaces"][0]["name"] = json!("eth0");
    write_json(
        &chain.path("noop.json"),
        &json!({"ReportResult": reported.to_string()}),
    );
    let add = chain
        .driver()
        .with_cap_args(json!({"mac": RUNTIME_MAC}))
        .add(&chain.conflist());
    assert_eq!(add["ok"], true, "{add}");
    let mut expected = expected_result("1.0.0", RUNTIME_MAC);
    expected["interfaces"][0]["name"] = json!("eth0");
    assert_eq!(add["result"], expected);
}
