//! `tuning`: changes `CNI_IFNAME` and the namespace's `net.*` sysctls, a
//! drop-in replacement for the reference `tuning` meta plugin.
//!
//! Chained after an interface plugin (a `prevResult` is required, code 7
//! otherwise). ADD writes each `sysctl` (`net.*` only; `IFNAME` in a key
//! stands for `CNI_IFNAME`), then saves the link's current MAC, MTU,
//! promiscuous and all-multicast modes to `<dataDir>/<id>_<ifname>.json`
//! (the reference's file, default directory `/run/cni/tuning`) and sets
//! what the configuration asks; it returns `prevResult` with the new MAC.
//! `args.cni` may override `sysctl` (merged), `mac`, `mtu`, `promisc` and
//! `allmulti`; the MAC follows [`requested_mac`] with the reference
//! tuning's precedence. DEL restores the saved values and removes the file.
//! CHECK verifies every setting.
//!
//! ```json
//! {"type": "tuning", "mtu": 1400, "mac": "02:00:00:00:00:07", "promisc": true,
//!  "sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1"}}
//! ```
//!
//! Where we deliberately differ: a bad sysctl name or MAC is code 7 before
//! anything changes (the reference fails half-way with code 999); `IFNAME`
//! is replaced in CHECK too, and a dotted interface name works in a key;
//! DEL removes the saved file when the namespace or link is gone (the
//! reference leaves it behind); the result's MAC changes only on the
//! container's interface, never on a host-side namesake.
//!
//! Go: containernetworking/plugins `plugins/meta/tuning`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cni_net::{Link, NetError, Netns};
use cni_skel::{BoxError, Plugin, Reply, Request};
use cni_types::conventions::{requested_mac, MacPrecedence};
use cni_types::{Code, Error, Mac, NetConf, Result100};
use serde::{Deserialize, Serialize};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI tuning sample plugin v0.1.0";

/// Where the reference keeps the values to restore.
pub const DEFAULT_DATA_DIR: &str = "/run/cni/tuning";

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// Where the original values are saved.
    #[serde(rename = "dataDir", default)]
    pub data_dir: Option<PathBuf>,
    /// `net.*` sysctls to set in the namespace.
    #[serde(default)]
    pub sysctl: BTreeMap<String, String>,
    /// The MAC address for the interface.
    #[serde(default)]
    pub mac: Option<String>,
    /// Promiscuous mode on (false leaves it alone).
    #[serde(default)]
    pub promisc: bool,
    /// The interface's MTU (0 leaves it alone).
    #[serde(default)]
    pub mtu: u32,
    /// All-multicast mode on or off.
    #[serde(default)]
    pub allmulti: Option<bool>,
}

/// `args.cni`: per-attachment overrides of the same keys.
#[derive(Debug, Default, Deserialize)]
struct Overrides {
    #[serde(default)]
    sysctl: Option<BTreeMap<String, String>>,
    #[serde(default)]
    promisc: Option<bool>,
    #[serde(default)]
    mtu: Option<u32>,
    #[serde(default)]
    allmulti: Option<bool>,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tuning;

type Req<'a> = Request<'a, NetConf<Fields>>;

/// What to set, validated: sysctl names resolved for `CNI_IFNAME`.
#[derive(Debug, Clone)]
struct Wanted {
    sysctl: Vec<(String, String)>,
    mac: Option<Mac>,
    promisc: bool,
    mtu: Option<u32>,
    allmulti: Option<bool>,
    data_dir: PathBuf,
}

impl Wanted {
    /// Reads and validates the request; nothing has changed yet.
    fn read(req: &Req) -> Result<Wanted, Error> {
        let conf = &req.config;
        let overrides: Overrides = match conf.args.as_ref().and_then(|a| a.0.get("cni")) {
            None => Overrides::default(),
            Some(cni) => Overrides::deserialize(cni).map_err(|e| {
                Error::new(Code::INVALID_NETWORK_CONFIG, "invalid args.cni")
                    .with_details(e.to_string())
            })?,
        };
        let mut sysctl = conf.plugin.sysctl.clone();
        sysctl.extend(overrides.sysctl.unwrap_or_default());
        // sysctl(8) writes a dot inside an interface name as '/'.
        let ifname = req.ifname.replace('.', "/");
        let sysctl = sysctl
            .into_iter()
            .map(|(key, value)| {
                let name = key.replacen("IFNAME", &ifname, 1);
                cni_net::sysctl_path(&name)?;
                Ok((name, value))
            })
            .collect::<Result<_, NetError>>()?;
        let mac = requested_mac(
            conf,
            &req.args,
            conf.plugin.mac.as_deref(),
            MacPrecedence::Tuning,
        )?;
        Ok(Wanted {
            sysctl,
            mac: mac.map(|m| m.mac),
            promisc: overrides.promisc.unwrap_or(conf.plugin.promisc),
            mtu: Some(overrides.mtu.unwrap_or(conf.plugin.mtu)).filter(|m| *m != 0),
            allmulti: overrides.allmulti.or(conf.plugin.allmulti),
            data_dir: data_dir(&conf.plugin),
        })
    }

    fn changes_the_link(&self) -> bool {
        self.mac.is_some() || self.mtu.is_some() || self.promisc || self.allmulti.is_some()
    }
}

/// The values to restore on DEL, in the reference's file format
/// (`configToRestore`).
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Saved {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    mac: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    promisc: Option<bool>,
    #[serde(default, skip_serializing_if = "is_zero")]
    mtu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allmulti: Option<bool>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `dataDir`, else the reference's default.
fn data_dir(fields: &Fields) -> PathBuf {
    let dir = fields.data_dir.clone();
    dir.filter(|d| !d.as_os_str().is_empty())
        .unwrap_or_else(|| DEFAULT_DATA_DIR.into())
}

fn saved_path(data_dir: &Path, req: &Req) -> PathBuf {
    data_dir.join(format!("{}_{}.json", req.container_id, req.ifname))
}

fn previous(req: &Req) -> Result<Result100, BoxError> {
    let prev = req.config.prev_result.as_ref().ok_or_else(|| {
        Error::new(Code::INVALID_NETWORK_CONFIG, "Required prevResult missing")
            .with_details("tuning must be chained after an interface plugin")
    })?;
    Ok(prev.to_current()?)
}

impl Plugin for Tuning {
    type Config = NetConf<Fields>;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let wanted = Wanted::read(req)?;
        let mut result = previous(req)?;
        let netns = Netns::of(req)?;
        for (name, value) in &wanted.sysctl {
            netns.set_sysctl(name, value)?;
        }
        if wanted.changes_the_link() {
            let mut nl = netns.socket()?;
            let link = nl.link(&req.ifname)?;
            save(&wanted, &link, &saved_path(&wanted.data_dir, req))?;
            if let Some(mac) = wanted.mac {
                nl.set_mac(link.index, mac)?;
                let sandbox = netns.path().display().to_string();
                for iface in &mut result.interfaces {
                    if iface.name == req.ifname
                        && (iface.sandbox.is_empty() || iface.sandbox == sandbox)
                    {
                        iface.mac = mac.to_string();
                    }
                }
            }
            if wanted.promisc {
                nl.set_promisc(link.index, true)?;
            }
            if let Some(mtu) = wanted.mtu {
                nl.set_mtu(link.index, mtu)?;
            }
            if let Some(on) = wanted.allmulti {
                nl.set_allmulti(link.index, on)?;
            }
        }
        Ok(result.into())
    }

    /// DEL reads only `dataDir` and the saved file: a configuration that
    /// ADD would refuse still lets the runtime clean up.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let path = saved_path(&data_dir(&req.config.plugin), req);
        let Ok(text) = std::fs::read(&path) else {
            return Ok(());
        };
        let socket = req
            .netns
            .as_ref()
            .and_then(|p| Netns::open(p).ok()?.socket().ok());
        if let Some(mut nl) = socket {
            if let Ok(Some(link)) = nl.link_by_name(&req.ifname) {
                // A file we cannot read restores nothing rather than
                // failing: a DEL that always fails blocks the runtime.
                let saved: Saved = serde_json::from_slice(&text).unwrap_or_default();
                restore(&mut nl, &link, &saved).map_err(|e| {
                    Error::new(Code::INTERNAL, "failed to restore the interface")
                        .with_details(e.to_string())
                })?;
            }
        }
        // Restored, or nothing left to restore it on.
        std::fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
        Ok(())
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let wanted = Wanted::read(req)?;
        previous(req)?;
        let netns = Netns::of(req)?;
        let differs = |what: String| Error::new(Code::INTERNAL, what);
        for (name, value) in &wanted.sysctl {
            let live = netns.sysctl(name)?;
            if live != *value {
                return Err(differs(format!(
                    "tuning configured value of {name} is {value}, current value is {live}"
                ))
                .into());
            }
        }
        let link = netns.socket()?.link(&req.ifname)?;
        let ifname = &req.ifname;
        if let Some(mac) = wanted.mac {
            if link.mac != Some(mac) {
                let live = link.mac.map(|m| m.to_string()).unwrap_or_default();
                return Err(differs(format!(
                    "tuning configured MAC of {ifname} is {mac}, current value is {live}"
                ))
                .into());
            }
        }
        if link.promisc != wanted.promisc {
            return Err(differs(format!(
                "tuning configured promiscuous mode of {ifname} is {}, current value is {}",
                wanted.promisc, link.promisc
            ))
            .into());
        }
        if let Some(mtu) = wanted.mtu.filter(|m| *m != link.mtu) {
            return Err(differs(format!(
                "tuning configured MTU of {ifname} is {mtu}, current value is {}",
                link.mtu
            ))
            .into());
        }
        if let Some(on) = wanted.allmulti.filter(|on| *on != link.allmulti) {
            return Err(differs(format!(
                "tuning configured all-multicast mode of {ifname} is {on}, current value is {}",
                link.allmulti
            ))
            .into());
        }
        Ok(())
    }
}

/// Saves what `wanted` is about to change, as the reference does.
fn save(wanted: &Wanted, link: &Link, path: &Path) -> Result<(), Error> {
    let saved = Saved {
        mac: wanted
            .mac
            .and(link.mac)
            .map(|m| m.to_string())
            .unwrap_or_default(),
        promisc: wanted.promisc.then_some(link.promisc),
        mtu: if wanted.mtu.is_some() { link.mtu } else { 0 },
        allmulti: wanted.allmulti.map(|_| link.allmulti),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
    let json = serde_json::to_vec_pretty(&saved).map_err(|e| Error::internal(&e))?;
    std::fs::write(path, json).map_err(|e| Error::io("write", path, e))
}

/// Puts the saved values back.
fn restore(nl: &mut cni_net::Netlink, link: &Link, saved: &Saved) -> Result<(), NetError> {
    if saved.mtu != 0 {
        nl.set_mtu(link.index, saved.mtu)?;
    }
    if let Ok(mac) = saved.mac.parse::<Mac>() {
        nl.set_mac(link.index, mac)?;
    }
    if let Some(on) = saved.promisc {
        nl.set_promisc(link.index, on)?;
    }
    if let Some(on) = saved.allmulti {
        nl.set_allmulti(link.index, on)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use cni_net::testing::TempNetns;
    use cni_version::PluginInfo;
    use serde_json::{json, Value};

    use super::*;

    /// A namespace with a veth pair, `eth0` inside.
    fn netns() -> TempNetns {
        let ns = TempNetns::new("tuning").unwrap();
        ns.add_veth("eth0", "peer0", None).unwrap();
        ns
    }

    fn conf(dir: &Path, fields: Value) -> String {
        let mut conf = json!({
            "cniVersion": "1.0.0", "name": "n", "type": "tuning", "dataDir": dir,
            "prevResult": {"cniVersion": "1.0.0",
                "interfaces": [{"name": "eth0", "mac": "02:00:00:00:00:01"}]}
        });
        conf.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        conf.to_string()
    }

    fn run(ns: &TempNetns, cmd: &str, conf: &str) -> cni_skel::Outcome {
        ns.request(cmd, "eth0")
            .stdin(conf.to_owned())
            .run(&Tuning, &PluginInfo::all())
    }

    #[test]
    fn add_sets_the_link_and_sysctls_and_del_restores_the_link() {
        let ns = netns();
        let dir = tempfile::tempdir().unwrap();
        let before = ns.socket().unwrap().link("eth0").unwrap();
        let conf = conf(
            dir.path(),
            json!({"mtu": 1280, "mac": "02:00:00:00:00:07", "promisc": true, "allmulti": true,
                   "sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1"}}),
        );
        let out = run(&ns, "ADD", &conf);
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["interfaces"][0]["mac"], "02:00:00:00:00:07");
        let link = ns.socket().unwrap().link("eth0").unwrap();
        assert_eq!(
            (
                link.mtu,
                link.mac.unwrap().to_string(),
                link.promisc,
                link.allmulti
            ),
            (1280, "02:00:00:00:00:07".to_owned(), true, true)
        );
        assert_eq!(ns.sysctl("net.ipv4.conf.eth0.arp_notify").unwrap(), "1");
        assert_eq!(run(&ns, "CHECK", &conf).exit_code, 0);

        assert_eq!(run(&ns, "DEL", &conf).exit_code, 0);
        let after = ns.socket().unwrap().link("eth0").unwrap();
        assert_eq!(
            (after.mtu, after.mac, after.promisc, after.allmulti),
            (before.mtu, before.mac, before.promisc, before.allmulti)
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        assert_eq!(run(&ns, "DEL", &conf).exit_code, 0, "DEL again");
    }

    #[test]
    fn check_names_the_setting_that_drifted() {
        let ns = netns();
        let dir = tempfile::tempdir().unwrap();
        let conf = conf(dir.path(), json!({"mtu": 1300}));
        assert_eq!(run(&ns, "ADD", &conf).exit_code, 0);
        let mut nl = ns.socket().unwrap();
        let eth0 = nl.link("eth0").unwrap();
        nl.set_mtu(eth0.index, 1400).unwrap();
        let err = run(&ns, "CHECK", &conf).error().unwrap();
        assert!(
            err.msg
                .contains("MTU of eth0 is 1300, current value is 1400"),
            "{err:?}"
        );
    }

    #[test]
    fn bad_input_is_code_7_and_changes_nothing() {
        let ns = netns();
        let dir = tempfile::tempdir().unwrap();
        for (fields, msg) in [
            (
                json!({"sysctl": {"kernel.hostname": "x"}, "mtu": 1300}),
                "kernel.hostname",
            ),
            (
                json!({"mac": "02:00:00:00:00", "mtu": 1300}),
                "invalid MAC address in mac",
            ),
        ] {
            let err = run(&ns, "ADD", &conf(dir.path(), fields)).error().unwrap();
            assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
            assert!(
                format!("{} {}", err.msg, err.details).contains(msg),
                "{err:?}"
            );
        }
        let no_prev = json!({"cniVersion": "1.0.0", "name": "n", "type": "tuning"}).to_string();
        let err = run(&ns, "ADD", &no_prev).error().unwrap();
        assert_eq!(
            (err.code, err.msg.as_str()),
            (Code::INVALID_NETWORK_CONFIG, "Required prevResult missing")
        );
        assert_ne!(ns.socket().unwrap().link("eth0").unwrap().mtu, 1300);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn del_of_a_configuration_add_refuses_still_succeeds() {
        let ns = netns();
        let dir = tempfile::tempdir().unwrap();
        let conf = conf(
            dir.path(),
            json!({"mac": "not-a-mac", "sysctl": {"kernel.x": "1"}}),
        );
        assert_eq!(run(&ns, "DEL", &conf).exit_code, 0);
    }
}
