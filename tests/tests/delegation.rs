//! Our `delegator` sample plugin delegating IPAM to Debian's reference
//! `host-local`, run by both runtimes: ours (`cnitool`, i.e.
//! `cni_invoke::Runtime`) and the reference runtime library (`libcni`,
//! through `cnidriver`). Each scenario runs once per runtime, in a fresh
//! sandbox with identical paths, and must behave the same way in both.
//!
//! Sandbox layout:
//!
//! ```text
//! <tmp>/bin/{delegator,noop}  -> our sample plugins (symlinks)
//! <tmp>/bin/host-local        -> /usr/lib/cni/host-local (symlink)
//! <tmp>/net.d/<net>.conflist  the list (NETCONFPATH for cnitool, --conflist for cnidriver)
//! <tmp>/cache/                result cache of either runtime
//! <tmp>/ipam/<net>/           host-local's dataDir: one file per reservation
//! ```
//!
//! STATUS and GC: Debian's libcni (1.1.2) predates them (they arrive with
//! libcni 1.2.0, spec 1.1.0), so the libcni side of those scenarios runs the
//! delegator directly with the environment libcni 1.2 passes (`CNI_COMMAND`
//! and `CNI_PATH` only).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use serde_json::{json, Value};
use tests::StdoutJson;
use tests::{
    base64_decode, plugin_bin_dir, read_json, reference_plugin_dir, run_plugin, write_json,
    Cnitool, Driver, FAKE_NETNS,
};

/// The container id both runtimes use.
const CID: &str = "deleg-c1";

/// A private test subnet for host-local.
const SUBNET: &str = "10.213.7.0/24";

/// Which runtime runs a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// Ours: `cnitool` (NETCONFPATH, CNI_PATH, `--cache-dir`).
    Cnitool,
    /// The reference runtime library, through `cnidriver`.
    Libcni,
}

const BOTH: [Via; 2] = [Via::Cnitool, Via::Libcni];

struct Sandbox {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::Builder::new()
            .prefix("cni-delegation-")
            .tempdir()
            .expect("creating a temporary directory");
        let root = tmp.path().to_path_buf();
        for dir in ["bin", "net.d", "cache", "ipam"] {
            fs::create_dir_all(root.join(dir)).expect("creating sandbox dirs");
        }
        for p in ["delegator", "noop"] {
            symlink(plugin_bin_dir().join(p), root.join("bin").join(p)).expect("linking plugin");
        }
        symlink(
            reference_plugin_dir().join("host-local"),
            root.join("bin/host-local"),
        )
        .expect("linking host-local");
        Sandbox { _tmp: tmp, root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn path_str(&self, rel: &str) -> String {
        self.path(rel).to_str().expect("UTF-8 temp path").to_owned()
    }

    /// Writes the list `net` (version `v`): the delegator with `fields`
    /// (merged), delegating to host-local on [`SUBNET`].
    fn delegator_list(&self, net: &str, v: &str, fields: Value) {
        let mut plugin = json!({
            "type": "delegator",
            "ipam": {
                "type": "host-local",
                "dataDir": self.path_str("ipam"),
                "ranges": [[{"subnet": SUBNET, "gateway": "10.213.7.1"}]],
                "routes": [{"dst": "0.0.0.0/0"}]
            }
        });
        let obj = plugin.as_object_mut().expect("an object");
        obj.extend(fields.as_object().expect("an object").clone());
        self.write_list(
            net,
            json!({"cniVersion": v, "name": net, "plugins": [plugin]}),
        );
    }

    fn write_list(&self, net: &str, list: Value) {
        write_json(&self.conflist(net), &list);
    }

    fn conflist(&self, net: &str) -> PathBuf {
        self.path("net.d").join(format!("{net}.conflist"))
    }

    fn cnitool(&self) -> Cnitool {
        Cnitool::new(self.path("net.d"), [self.path("bin")], self.path("cache"))
            .with_container_id(CID)
    }

    fn driver(&self) -> Driver {
        Driver::new([self.path("bin")], self.path("cache"))
            .with_container_id(CID)
            .with_netns(FAKE_NETNS)
    }

    /// Runs `command` (add, check, del) on `net` through `via`, and
    /// returns `{"ok":true,"result":R|null}` or `{"ok":false,"error":{"code","msg","details"}}`.
    ///
    /// The error's `details` are the plugin's own in both: libcni says
    /// which plugin failed in its wrapping message (`plugin type="x"
    /// name="y" failed (add): ...`), ours prefixes the details with
    /// `plugin type="x" failed (add)`; that prefix is checked and removed.
    fn run(&self, via: Via, command: &str, net: &str) -> Value {
        match via {
            Via::Cnitool => {
                let mut r = self.cnitool().run(&[command, net, FAKE_NETNS]);
                if r["ok"] == false {
                    let op = match command {
                        "del" => "delete",
                        other => other,
                    };
                    let prefix = format!("plugin type=\"delegator\" failed ({op})");
                    let details = r["error"]["details"].as_str().unwrap_or_default();
                    let own = match details.strip_prefix(&prefix) {
                        Some(rest) => rest.strip_prefix(": ").unwrap_or(rest).to_owned(),
                        None => panic!("our error names the failing plugin: {r}"),
                    };
                    r["error"] = json!({
                        "code": r["error"]["code"],
                        "msg": r["error"]["msg"],
                        "details": own
                    });
                }
                r
            }
            Via::Libcni => {
                let d = self.driver();
                let list = self.conflist(net);
                let r = match command {
                    "add" => d.add(&list),
                    "check" => d.check(&list),
                    "del" => d.del(&list),
                    other => panic!("no {other} in cnidriver"),
                };
                if r["ok"] == true {
                    let mut result = r["result"].clone();
                    // libcni prints an empty `dns` as `{}`; ours omits it
                    // (README, "Where we depart", 7).
                    if let Some(obj) = result.as_object_mut() {
                        if obj.get("dns") == Some(&json!({})) {
                            obj.remove("dns");
                        }
                    }
                    json!({"ok": true, "result": result})
                } else {
                    json!({"ok": false, "error": {
                        "code": r["error"]["code"],
                        "msg": r["error"]["msg"],
                        "details": r["error"]["details"]
                    }})
                }
            }
        }
    }

    /// Sorted names of the files in host-local's directory for `net`
    /// (empty when it does not exist).
    fn ipam_files(&self, net: &str) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.path("ipam").join(net)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .map(|e| {
                e.expect("dir entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    /// Whether a result is cached for (`net`, [`CID`], eth0).
    fn cached(&self, net: &str) -> bool {
        self.path("cache/results")
            .join(format!("{net}-{CID}-eth0"))
            .exists()
    }
}

/// What host-local keeps besides reservations.
fn bookkeeping() -> Vec<String> {
    vec!["last_reserved_ip.0".to_owned(), "lock".to_owned()]
}

/// ADD returns the container interface (`CNI_IFNAME` in `CNI_NETNS`) with
/// host-local's address on it (interface index 0), gateway and routes;
/// host-local's reservation file names the container; CHECK is delegated
/// and passes; DEL is delegated and the reservation is gone; DEL again
/// succeeds; CHECK after DEL reaches host-local, whose error (999, "Failed
/// to find address") comes back intact.
#[test]
fn delegated_ipam_reserves_on_add_and_releases_on_del() {
    for via in BOTH {
        let sb = Sandbox::new();
        sb.delegator_list("delnet", "1.0.0", json!({"requireFamilies": ["4"]}));

        let add = sb.run(via, "add", "delnet");
        assert_eq!(
            add,
            json!({"ok": true, "result": {
                "cniVersion": "1.0.0",
                "interfaces": [{"name": "eth0", "sandbox": FAKE_NETNS}],
                "ips": [{"interface": 0, "address": "10.213.7.2/24", "gateway": "10.213.7.1"}],
                "routes": [{"dst": "0.0.0.0/0"}]
            }}),
            "{via:?}"
        );
        let mut files = bookkeeping();
        files.insert(0, "10.213.7.2".to_owned());
        assert_eq!(sb.ipam_files("delnet"), files, "{via:?}");
        let owner = fs::read_to_string(sb.path("ipam/delnet/10.213.7.2")).expect("reservation");
        assert_eq!(
            owner,
            format!("{CID}\r\neth0"),
            "{via:?}: host-local's record"
        );
        assert!(sb.cached("delnet"), "{via:?}");

        assert_eq!(
            sb.run(via, "check", "delnet"),
            json!({"ok": true, "result": null}),
            "{via:?}"
        );

        for round in ["first", "second"] {
            assert_eq!(
                sb.run(via, "del", "delnet"),
                json!({"ok": true, "result": null}),
                "{via:?}: {round} DEL"
            );
            assert_eq!(
                sb.ipam_files("delnet"),
                bookkeeping(),
                "{via:?}: {round} DEL"
            );
            assert!(!sb.cached("delnet"), "{via:?}: {round} DEL");
        }

        assert_eq!(
            sb.run(via, "check", "delnet"),
            json!({"ok": false, "error": {
                "code": 999,
                "msg": format!("host-local: Failed to find address added by container {CID}"),
                "details": ""
            }}),
            "{via:?}: CHECK after DEL"
        );
    }
}

/// The next ADD after a DEL gets host-local's next address (it does not
/// reuse the last one at once): the delegator reports whatever IPAM gave.
#[test]
fn a_second_attachment_gets_the_next_address() {
    for via in BOTH {
        let sb = Sandbox::new();
        sb.delegator_list("delnet", "0.4.0", json!({}));
        for (round, addr) in [("first", "10.213.7.2"), ("second", "10.213.7.3")] {
            let add = sb.run(via, "add", "delnet");
            assert_eq!(
                add["result"]["ips"],
                json!([{"version": "4", "interface": 0, "address": format!("{addr}/24"), "gateway": "10.213.7.1"}]),
                "{via:?} {round}: {add}"
            );
            assert_eq!(add["result"]["cniVersion"], "0.4.0");
            assert_eq!(sb.run(via, "del", "delnet")["ok"], true, "{via:?} {round}");
        }
    }
}

/// When the delegator fails after host-local's ADD succeeded (an IPv6
/// address is required, the range is IPv4 only) ADD fails with code 7 and
/// the delegated DEL has released the address: host-local's directory holds
/// only its bookkeeping, nothing is cached, and the runtime's clean-up DEL
/// succeeds.
#[test]
fn add_failing_after_ipam_success_releases_the_address() {
    for via in BOTH {
        let sb = Sandbox::new();
        sb.delegator_list("v6net", "1.0.0", json!({"requireFamilies": ["6"]}));

        let add = sb.run(via, "add", "v6net");
        assert_eq!(
            add,
            json!({"ok": false, "error": {
                "code": 7,
                "msg": "IPAM assigned no address of a required family",
                "details": "requireFamilies has V6; host-local returned 1 address(es)"
            }}),
            "{via:?}"
        );
        assert_eq!(
            sb.ipam_files("v6net"),
            bookkeeping(),
            "{via:?}: the address host-local gave was released"
        );
        assert!(!sb.cached("v6net"), "{via:?}");
        assert_eq!(sb.run(via, "del", "v6net")["ok"], true, "{via:?}");
    }
}

/// A list of version 1.1.0 with Debian's host-local (1.1.1, which supports
/// up to 1.0.0): the delegator passes host-local's refusal through
/// unchanged in both runtimes: ADD and DEL fail with code 1 and
/// host-local's message; nothing is reserved.
#[test]
fn debian_host_local_refuses_a_1_1_0_configuration_and_the_refusal_passes_through() {
    let refusal = json!({
        "code": 1,
        "msg": "incompatible CNI versions",
        "details": "config is \"1.1.0\", plugin supports [\"0.1.0\" \"0.2.0\" \"0.3.0\" \"0.3.1\" \"0.4.0\" \"1.0.0\"]"
    });
    for via in BOTH {
        let sb = Sandbox::new();
        sb.delegator_list("net110", "1.1.0", json!({}));
        for command in ["add", "del"] {
            assert_eq!(
                sb.run(via, command, "net110"),
                json!({"ok": false, "error": refusal}),
                "{via:?} {command}"
            );
        }
        assert_eq!(sb.ipam_files("net110"), Vec::<String>::new(), "{via:?}");
    }
}

/// The delegator run directly for STATUS or GC, as libcni 1.2 runs a
/// plugin: `CNI_COMMAND` and `CNI_PATH`, no container id, netns or ifname;
/// stdin is the plugin's configuration with `name` and `cniVersion`
/// (and, for GC, the valid attachments) inserted.
fn run_delegator_directly(sb: &Sandbox, command: &str, config: &Value) -> Value {
    let out = run_plugin(
        &sb.path("bin/delegator"),
        &[("CNI_COMMAND", command), ("CNI_PATH", &sb.path_str("bin"))],
        config.to_string().as_bytes(),
    );
    match out.status() {
        Some(0) => {
            assert_eq!(out.stdout_str(), "", "{command} prints nothing: {out:?}");
            json!({"ok": true})
        }
        Some(1) => {
            let e = out.stdout_json();
            json!({"ok": false, "error": {"code": e["code"], "msg": e["msg"], "details": e["details"]}})
        }
        _ => panic!("delegator {command}: {out:?}"),
    }
}

/// STATUS and GC through cnitool (our runtime), as a report
/// `{"ok"[,"error":{"code","msg","details"}]}`; GC's `details` name every
/// failing plugin, STATUS's are the plugin's own.
fn cnitool_status_gc(sb: &Sandbox, command: &str, net: &str, valid: &[&str]) -> Value {
    let r = match command {
        "status" => sb.cnitool().status(net),
        "gc" => sb.cnitool().gc(net, valid),
        other => panic!("{other}"),
    };
    if r["ok"] == true {
        assert_eq!(r["result"], Value::Null);
        json!({"ok": true})
    } else {
        json!({"ok": false, "error": {"code": r["error"]["code"], "msg": r["error"]["msg"], "details": r["error"]["details"]}})
    }
}

/// STATUS and GC on a 1.1.0 list reach the delegate: with our `noop` as the
/// IPAM plugin (it records the command and what it received in its debug
/// file, named by the top-level `debugFile` key it sees because delegates
/// get the whole configuration), the delegate gets `STATUS`/`GC` with
/// `CNI_PATH`, no container id, netns or ifname, and the delegator's
/// configuration including `cni.dev/valid-attachments` for GC. The
/// delegate's error (code 50, "not ready") is the answer, in both our
/// runtime and a direct run.
#[test]
fn status_and_gc_are_forwarded_to_the_delegate() {
    let sb = Sandbox::new();
    let debug = sb.path("ipam-noop.json");
    let plugin = json!({"type": "delegator", "debugFile": debug, "ipam": {"type": "noop"}});
    sb.write_list(
        "fwd",
        json!({"cniVersion": "1.1.0", "name": "fwd", "plugins": [plugin]}),
    );
    let mut exec_config = plugin.clone();
    exec_config["name"] = json!("fwd");
    exec_config["cniVersion"] = json!("1.1.0");
    let valid = json!([{"containerID": "c9", "ifname": "eth1"}]);
    let mut gc_config = exec_config.clone();
    gc_config["cni.dev/valid-attachments"] = valid.clone();
    gc_config["cni.dev/attachments"] = valid.clone();

    let recorded = || {
        let d = read_json(&debug);
        let stdin: Value = serde_json::from_slice(&base64_decode(
            d["CmdArgs"]["StdinData"].as_str().expect("StdinData"),
        ))
        .expect("the delegate's stdin is JSON");
        json!({
            "command": d["Command"],
            "containerID": d["CmdArgs"]["ContainerID"],
            "netns": d["CmdArgs"]["Netns"],
            "ifname": d["CmdArgs"]["IfName"],
            "path": d["CmdArgs"]["Path"],
            "stdin": stdin
        })
    };
    let expect = |command: &str, stdin: &Value| {
        json!({
            "command": command, "containerID": "", "netns": "", "ifname": "",
            "path": sb.path_str("bin"), "stdin": stdin
        })
    };

    // Ours: cnitool.
    write_json(&debug, &json!({}));
    assert_eq!(
        cnitool_status_gc(&sb, "status", "fwd", &[]),
        json!({"ok": true})
    );
    assert_eq!(recorded(), expect("STATUS", &exec_config));
    write_json(&debug, &json!({}));
    assert_eq!(
        cnitool_status_gc(&sb, "gc", "fwd", &["c9/eth1"]),
        json!({"ok": true})
    );
    assert_eq!(recorded(), expect("GC", &gc_config));

    // As libcni 1.2 would run the delegator.
    write_json(&debug, &json!({}));
    assert_eq!(
        run_delegator_directly(&sb, "STATUS", &exec_config),
        json!({"ok": true})
    );
    assert_eq!(recorded(), expect("STATUS", &exec_config));
    write_json(&debug, &json!({}));
    assert_eq!(
        run_delegator_directly(&sb, "GC", &gc_config),
        json!({"ok": true})
    );
    assert_eq!(recorded(), expect("GC", &gc_config));

    // The delegate is not ready: its error is the answer.
    let not_ready = json!({"ReportError": "not ready", "ReportErrorCode": 50});
    write_json(&debug, &not_ready);
    assert_eq!(
        cnitool_status_gc(&sb, "status", "fwd", &[]),
        json!({"ok": false, "error": {
            "code": 50, "msg": "not ready",
            "details": "plugin type=\"delegator\" failed (status)"
        }})
    );
    write_json(&debug, &not_ready);
    assert_eq!(
        run_delegator_directly(&sb, "STATUS", &exec_config),
        json!({"ok": false, "error": {"code": 50, "msg": "not ready", "details": null}})
    );
    write_json(&debug, &not_ready);
    assert_eq!(
        cnitool_status_gc(&sb, "gc", "fwd", &[]),
        json!({"ok": false, "error": {
            "code": 50, "msg": "not ready",
            "details": "plugin type=\"delegator\" failed (gc)"
        }})
    );
}

/// STATUS and GC forwarded to Debian's host-local, which predates them: its
/// skel validates the container id before looking at the command, so with
/// no `CNI_CONTAINERID` (STATUS and GC carry none) it answers code 3
/// "missing containerID". The delegator passes that through, in our
/// runtime and in a direct run alike.
#[test]
fn status_and_gc_reach_debian_host_local_and_its_answer_passes_through() {
    let sb = Sandbox::new();
    sb.delegator_list("net110", "1.1.0", json!({}));
    let missing = json!({"code": 3, "msg": "missing containerID", "details": null});
    assert_eq!(
        cnitool_status_gc(&sb, "status", "net110", &[]),
        json!({"ok": false, "error": {
            "code": 3, "msg": "missing containerID",
            "details": "plugin type=\"delegator\" failed (status)"
        }})
    );
    assert_eq!(
        cnitool_status_gc(&sb, "gc", "net110", &[]),
        json!({"ok": false, "error": {
            "code": 3, "msg": "missing containerID",
            "details": "plugin type=\"delegator\" failed (gc)"
        }})
    );

    let mut config = read_json(&sb.conflist("net110"))["plugins"][0].clone();
    config["name"] = json!("net110");
    config["cniVersion"] = json!("1.1.0");
    assert_eq!(
        run_delegator_directly(&sb, "STATUS", &config),
        json!({"ok": false, "error": missing})
    );
    config["cni.dev/valid-attachments"] = json!([]);
    assert_eq!(
        run_delegator_directly(&sb, "GC", &config),
        json!({"ok": false, "error": missing})
    );
    assert_eq!(sb.ipam_files("net110"), Vec::<String>::new());
}
