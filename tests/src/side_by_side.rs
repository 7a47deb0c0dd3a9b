//! One-link interface plugins (macvlan, ipvlan, vlan, dummy, tap) run as
//! processes through ADD, CHECK and DEL in a namespace of their own, and
//! what they leave read back with `ip`: for comparing ours with the
//! reference binaries side by side, where libcni is not needed (the VM
//! tests in `tests/vm`).

use std::path::Path;

use serde_json::{json, Value};

use crate::{global_addrs, ip, NetNs, StdoutJson};

/// A host link `name` (one end of a veth pair, both ends up) to be a
/// master, deleted with its peer when the returned guard drops.
///
/// # Panics
/// If `ip` cannot make it.
pub fn master_link(name: &str) -> NetNs {
    let guard = NetNs::create(&format!("{name}-guard"));
    guard.delete_link_on_drop(name);
    let peer = format!("{name}p");
    for args in [
        &["link", "add", name, "type", "veth", "peer", "name", &peer][..],
        &["link", "set", name, "up"],
        &["link", "set", &peer, "up"],
    ] {
        let out = ip(args);
        assert!(out.success(), "ip {args:?}: {out:?}");
    }
    guard
}

/// What one plugin did: its ADD result (generated MACs as `<mac>`), the
/// link after ADD, CHECK's verdict, and whether the link was gone after
/// DEL and a second DEL succeeded.
#[derive(Debug, PartialEq)]
pub struct Steps {
    /// The ADD result, normalised.
    pub add: Value,
    /// [`link_state`] after ADD.
    pub link: Value,
    /// CHECK succeeded (`null` below 0.4.0, where there is none).
    pub check: Value,
    /// After DEL twice: `[link gone, second DEL succeeded]`.
    pub after_del: Value,
}

/// Runs `plugin` through ADD, CHECK (from 0.4.0) and DEL twice with
/// `conf` for `ifname` in a fresh namespace named after `tag`, IPAM and
/// anything else from `cni_path`.
///
/// # Panics
/// If ADD or DEL fails (the outcome is in the message).
pub fn add_check_del(
    plugin: &Path,
    cni_path: &str,
    conf: &Value,
    tag: &str,
    ifname: &str,
) -> Steps {
    let ns = NetNs::create(tag);
    let netns = ns.path();
    let cid = format!("sbs-{tag}-{}", std::process::id());
    let run = |command: &str, conf: &Value| {
        let env = [
            ("CNI_COMMAND", command),
            ("CNI_CONTAINERID", cid.as_str()),
            ("CNI_NETNS", netns.as_str()),
            ("CNI_IFNAME", ifname),
            ("CNI_PATH", cni_path),
        ];
        crate::run_plugin(plugin, &env, conf.to_string().as_bytes())
    };
    let add = run("ADD", conf);
    assert!(add.success(), "{} ADD: {add:?}", plugin.display());
    let result = add.stdout_json();
    let link = link_state(&ns, ifname);
    let check = if conf["cniVersion"] == "0.3.1" {
        Value::Null
    } else {
        let mut with_prev = conf.clone();
        with_prev["prevResult"] = result.clone();
        json!(run("CHECK", &with_prev).success())
    };
    let del = run("DEL", conf);
    assert!(del.success(), "{} DEL: {del:?}", plugin.display());
    let again = run("DEL", conf).success();
    let gone = !ip(&["-n", ns.name(), "link", "show", "dev", ifname]).success();
    Steps {
        add: normalise(result),
        link,
        check,
        after_del: json!([gone, again]),
    }
}

/// Generated MACs and the namespace path (each side has its own)
/// replaced by placeholders; an empty `dns` (Go prints its empty struct,
/// ours leaves it out) and a null `ips` left out.
fn normalise(mut result: Value) -> Value {
    if let Some(map) = result.as_object_mut() {
        map.retain(|k, v| !(k == "dns" && *v == json!({}) || k == "ips" && v.is_null()));
    }
    for iface in result["interfaces"].as_array_mut().into_iter().flatten() {
        for (key, placeholder) in [("mac", "<mac>"), ("sandbox", "<netns>")] {
            if iface[key].is_string() {
                iface[key] = json!(placeholder);
            }
        }
    }
    result
}

/// Runs our `plugin` and Debian's (IPAM: the reference `host-local` on
/// both sides, storing apart) with `conf` at each of [`crate::versions`], and
/// asserts the same result, link, CHECK verdict and state after DEL.
///
/// # Panics
/// On the first difference, showing both sides.
pub fn same_as_reference(plugin: &str, tag: &str, ifname: &str, conf: &Value) {
    let reference = crate::reference_plugin_dir();
    let ours = crate::plugin_bin_dir();
    let ours_path = std::env::join_paths(crate::ours_with_reference_host_local())
        .expect("plugin directories join")
        .into_string()
        .expect("UTF-8 plugin directories");
    if crate::under_emulation() {
        eprintln!(
            "note: under QEMU, {plugin} is compared at {:?} only",
            crate::versions()
        );
    }
    for &version in crate::versions() {
        let vtag = format!("{tag}{}", version.replace('.', ""));
        let sides = [
            (ours.join(plugin), ours_path.clone(), "o"),
            (reference.join(plugin), reference.display().to_string(), "r"),
        ];
        let [a, b] = sides.map(|(bin, path, side)| {
            let data = tempfile::tempdir().expect("a temporary directory");
            let mut conf = conf.clone();
            conf["cniVersion"] = json!(version);
            if conf.get("ipam").is_some() {
                conf["ipam"]["dataDir"] = json!(data.path());
            }
            add_check_del(&bin, &path, &conf, &format!("{vtag}{side}"), ifname)
        });
        if version != "0.3.1" {
            assert_eq!(a.check, true, "our CHECK at {version}");
        }
        for (what, x, y) in [
            ("ADD result", &a.add, &b.add),
            ("link after ADD", &a.link, &b.link),
            ("CHECK", &a.check, &b.check),
            ("after DEL", &a.after_del, &b.after_del),
        ] {
            assert_eq!(
                crate::first_difference(x, y),
                None,
                "{plugin} {what} at {version}: ours {x:#}\nreference {y:#}"
            );
        }
    }
}

/// The link `ifname` in `ns` as a user relies on it: kind, the settings
/// of its kind (mode, VLAN id, tap flags), MTU, state, global addresses,
/// routes through it; `null` when it is not there.
///
/// # Panics
/// If `ip` prints no JSON.
pub fn link_state(ns: &NetNs, ifname: &str) -> Value {
    let out = ip(&["-n", ns.name(), "-d", "-j", "addr", "show", "dev", ifname]);
    if !out.success() {
        return Value::Null;
    }
    let l = &out.stdout_json()[0];
    let info = &l["linkinfo"]["info_data"];
    let settings: serde_json::Map<String, Value> = [
        "mode",
        "protocol",
        "id",
        "type",
        "pi",
        "vnet_hdr",
        "multi_queue",
        "persist",
        "user",
        "group",
    ]
    .iter()
    .filter(|k| !info[**k].is_null())
    .map(|k| (k.to_string(), info[*k].clone()))
    .collect();
    let routes = ip(&["-n", ns.name(), "-j", "route", "show", "dev", ifname]);
    let mut routes: Vec<Value> = routes
        .stdout_json()
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| json!({"dst": r["dst"], "gateway": r["gateway"], "scope": r["scope"]}))
        .collect();
    routes.sort_by_key(|r| r.to_string());
    let up = crate::link_is_up(l);
    json!({
        "kind": l["linkinfo"]["info_kind"],
        "settings": settings,
        "mtu": l["mtu"],
        "up": up,
        "addrs": global_addrs(l),
        "routes": routes,
    })
}
