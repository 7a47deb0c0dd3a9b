//! The sandbox of the tests that run configuration lists in a real network
//! namespace (`runtime_in_netns`, `veth_netns`): a configuration directory,
//! a result cache and an IPAM data directory, and one way to run a command
//! of a list through either runtime.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::{write_json, Cnitool, Driver, NetNs};

/// Which runtime executes the list: our `cnitool` or the reference libcni.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// Our runtime, `cni_invoke::Runtime`, through the `cnitool` binary.
    Cnitool,
    /// The reference runtime library, through the Go helper.
    Libcni,
}

/// A configuration directory (`net.d`), a result cache (`cache`) and an
/// IPAM data directory (`ipam`) under one temporary directory, with the
/// plugin directories the runtimes search.
pub struct NetDirs {
    tmp: tempfile::TempDir,
    cni_path: Vec<PathBuf>,
}

impl NetDirs {
    /// A new sandbox (`prefix` names its temporary directory) whose
    /// runtimes find plugins in `cni_path`, in that order.
    pub fn new(prefix: &str, cni_path: Vec<PathBuf>) -> NetDirs {
        let tmp = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("creating a temporary directory");
        NetDirs { tmp, cni_path }
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }

    /// Wipes the cache and the data dir, writes the list (named by its
    /// `name`).
    pub fn reset(&self, list: &Value) {
        for dir in ["cache", "ipam", "net.d"] {
            let _ = fs::remove_dir_all(self.root().join(dir));
            fs::create_dir_all(self.root().join(dir)).expect("creating dirs");
        }
        let net = list["name"].as_str().expect("the list has a name");
        write_json(&self.conflist(net), list);
    }

    /// Where the list `net` is written.
    pub fn conflist(&self, net: &str) -> PathBuf {
        self.root().join("net.d").join(format!("{net}.conflist"))
    }

    /// The IPAM `dataDir`.
    pub fn ipam(&self) -> String {
        self.root().join("ipam").display().to_string()
    }

    /// Everything in the network's IPAM directory but the lock and the
    /// round-robin bookkeeping, as `(name, content)`: the reservations
    /// (and anything else a plugin left behind), sorted.
    pub fn reservations(&self, net: &str) -> Vec<(String, String)> {
        let Ok(entries) = fs::read_dir(self.root().join("ipam").join(net)) else {
            return Vec::new();
        };
        let mut out: Vec<(String, String)> = entries
            .map(|e| e.expect("entry"))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    fs::read_to_string(e.path()).unwrap_or_default(),
                )
            })
            .filter(|(n, _)| n != "lock" && !n.starts_with("last_reserved_ip."))
            .collect();
        out.sort();
        out
    }

    /// `cnitool` over this sandbox, for container `cid`.
    pub fn cnitool(&self, cid: &str) -> Cnitool {
        Cnitool::new(
            self.root().join("net.d"),
            self.cni_path.clone(),
            self.root().join("cache"),
        )
        .with_container_id(cid)
    }

    /// Runs `command` (add, check or del) of the list `net` for container
    /// `cid`, interface `ifname` in `ns`, through `via`:
    /// `{"ok":true,"result":R|null}` or
    /// `{"ok":false,"error":{"code","msg"},"raw":...}` (the full answer in
    /// `"raw"`, for messages). libcni's empty `dns` (`{}`) is removed: ours
    /// omits it (README, "Where we depart", 7).
    pub fn run(
        &self,
        via: Via,
        command: &str,
        net: &str,
        ns: &NetNs,
        cid: &str,
        ifname: &str,
    ) -> Value {
        let r = match via {
            Via::Cnitool => self
                .cnitool(cid)
                .with_ifname(ifname)
                .run(&[command, net, &ns.path()]),
            Via::Libcni => {
                let d = Driver::new(self.cni_path.clone(), self.root().join("cache"))
                    .with_container_id(cid)
                    .with_netns(&ns.path())
                    .with_ifname(ifname);
                let list = self.conflist(net);
                match command {
                    "add" => d.add(&list),
                    "check" => d.check(&list),
                    "del" => d.del(&list),
                    other => panic!("{other}"),
                }
            }
        };
        if r["ok"] != true {
            return json!({
                "ok": false,
                "error": {"code": r["error"]["code"], "msg": r["error"]["msg"]},
                "raw": r
            });
        }
        let mut result = r["result"].clone();
        if via == Via::Libcni {
            if let Some(obj) = result.as_object_mut() {
                if obj.get("dns") == Some(&json!({})) {
                    obj.remove("dns");
                }
            }
        }
        json!({"ok": true, "result": result})
    }
}
