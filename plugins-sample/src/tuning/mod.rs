//! `tuning`: changes `CNI_IFNAME` and the namespace's `net.*` sysctls, a
//! drop-in replacement for the reference `tuning` meta plugin.
//!
//! Chained after an interface plugin (a `prevResult` is required, code 7
//! otherwise). ADD writes each `sysctl` (`net.*` only; `IFNAME` in a key
//! stands for `CNI_IFNAME`, see [`cni_net::sysctl_for_ifname`]), then
//! saves the link's current MAC, MTU, promiscuous and all-multicast modes
//! to `<dataDir>/<id>_<ifname>.json` (the reference's file, default
//! directory `/run/cni/tuning`) and sets what the configuration asks; it
//! returns `prevResult` with the new MAC. `args.cni` may override `sysctl`
//! (merged), `mac`, `mtu`, `promisc` and `allmulti`; the MAC follows
//! [`requested_mac`](cni_types::conventions::requested_mac) with the
//! reference tuning's precedence. DEL restores the saved values and
//! removes the file. CHECK verifies every setting.
//!
//! ```json
//! {"type": "tuning", "mtu": 1400, "mac": "02:00:00:00:00:07", "promisc": true,
//!  "sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1"}}
//! ```
//!
//! The modules: `config.rs` reads and validates the configuration,
//! `backup.rs` keeps the values to restore, `apply.rs` sets, restores and
//! compares the link's settings.
//!
//! Where we deliberately differ:
//! - Everything is checked before anything changes, each failure code 7
//!   naming the key: a sysctl name outside `net.*`, a sysctl value with a
//!   newline or NUL, a sysctl the namespace lacks, a MAC no interface can
//!   take (group or all-zero), an MTU outside 68..=65535, a `dataDir` that
//!   is not a directory; a missing `CNI_IFNAME` is the link's error, also
//!   first. The reference fails half-way, with code 999.
//! - `IFNAME` is replaced in CHECK too, as v1.9 does (Debian's 1.1.1
//!   reads `/proc/sys/net/ipv4/conf/IFNAME/...` and fails).
//! - `txQLen` (reference v1.2 on) is code 2: this plugin does not set it.
//! - The backup is written to a temporary file (mode 0600) and then given
//!   its name, never in place; a second ADD keeps the values the first
//!   saved and only adds new ones; a backup that is a link, a FIFO, too
//!   long or not the reference's JSON is code 5 naming it (the reference
//!   silently ignores it and leaves it behind). See `backup.rs`.
//! - DEL removes the saved file when the namespace ([`Netns::of_for_del`])
//!   or the link is gone (the reference leaves it behind), and tries to
//!   restore every value even when one fails.
//! - The result's MAC changes only on the container's interface, never on
//!   a host-side namesake.
//! - The backup also names the container's namespace (`netns`, a key the
//!   reference ignores), and GC, which the reference lacks, removes the
//!   backups of attachments `cni.dev/valid-attachments` does not list
//!   whose namespace is gone (nothing is left to restore them on). The
//!   file's name says no network, so a backup whose namespace still
//!   exists may be another network's live attachment, and is kept.
//!
//! Go: containernetworking/plugins `plugins/meta/tuning`.

use std::path::PathBuf;

use cni_net::{Link, Netlink, Netns};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Code, Error, NetConf, Result100};

mod apply;
mod backup;
mod config;

use self::backup::Backup;
pub use self::config::Fields;
use self::config::{data_dir, Wanted};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI tuning sample plugin v0.1.0";

/// Where the reference keeps the values to restore.
pub const DEFAULT_DATA_DIR: &str = "/run/cni/tuning";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tuning;

type Req<'a> = Request<'a, NetConf<Fields>>;

fn previous(req: &Req) -> Result<Result100, BoxError> {
    Ok(req
        .prev_result_or("Required prevResult missing")?
        .into_owned())
}

/// Code 7 for the first sysctl `netns` does not have.
fn check_sysctls_exist(netns: &Netns, wanted: &Wanted) -> Result<(), Error> {
    for s in &wanted.sysctl {
        if !netns.has_sysctl(&s.name)? {
            let file = cni_net::sysctl_path(&s.name)?;
            return Err(Error::invalid_config(
                &format!("sysctl {}", s.key),
                format_args!(
                    "{} does not exist in {}",
                    file.display(),
                    netns.path().display()
                ),
            ));
        }
    }
    Ok(())
}

/// What ADD finds before it changes the link: the link, and the backup
/// that an earlier ADD left.
struct LinkChange {
    nl: Netlink,
    link: Link,
    /// The backup file's path.
    backup: PathBuf,
    earlier: Option<Backup>,
}

impl LinkChange {
    /// Finds `CNI_IFNAME` and reads its backup, making `dataDir` if needed:
    /// no link, a `dataDir` that is no directory or a bad backup fails
    /// here, before anything changes.
    fn prepare(netns: &Netns, req: &Req, wanted: &Wanted) -> Result<LinkChange, Error> {
        let mut nl = netns.socket()?;
        let link = nl.link(&req.ifname)?;
        backup::prepare_dir(&wanted.data_dir)?;
        let backup = backup::path(&wanted.data_dir, req);
        let earlier = Backup::read(&backup)?;
        Ok(LinkChange {
            nl,
            link,
            backup,
            earlier,
        })
    }
}

/// DEL's way into the container: its socket and `CNI_IFNAME`, or `None`
/// when there is nothing to restore on: the namespace is gone (the one
/// rule of [`Netns::of_for_del`]) or has no such link.
fn container_link(req: &Req) -> Result<Option<(Netlink, Link)>, Error> {
    let Some(netns) = Netns::of_for_del(req)? else {
        return Ok(None);
    };
    let mut nl = netns.socket()?;
    Ok(nl.find_link(&req.ifname)?.map(|link| (nl, link)))
}

impl Plugin for Tuning {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let wanted = Wanted::read(req)?;
        let mut result = previous(req)?;
        let netns = Netns::of(req)?;
        check_sysctls_exist(&netns, &wanted)?;
        let link_change = if wanted.changes_the_link() {
            Some(LinkChange::prepare(&netns, req, &wanted)?)
        } else {
            None
        };
        // Everything is checked: changes start here.
        if let Some(change) = &link_change {
            let mut backup = Backup::merged(change.earlier.as_ref(), &wanted, &change.link);
            if backup.netns.is_none() {
                backup.netns = req.netns.clone();
            }
            backup.save(&change.backup, change.earlier.as_ref())?;
        }
        for s in &wanted.sysctl {
            netns.set_sysctl(&s.name, &s.value)?;
        }
        if let Some(mut change) = link_change {
            apply::apply(&mut change.nl, &change.link, &wanted)?;
            if let Some(mac) = wanted.mac {
                let sandbox = netns.path().display().to_string();
                for iface in &mut result.interfaces {
                    if iface.name == req.ifname
                        && (iface.sandbox.is_empty() || iface.sandbox == sandbox)
                    {
                        iface.mac = mac.to_string();
                    }
                }
            }
        }
        Ok(result.into())
    }

    /// DEL reads only `dataDir` and the saved file: a configuration that
    /// ADD would refuse still lets the runtime clean up.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let path = backup::path(&data_dir(&req.config.plugin), req);
        let Some(backup) = Backup::read(&path).transpose() else {
            return Ok(());
        };
        // With the namespace or the link gone there is nothing to restore
        // on, and the file goes, even a bad one.
        if let Some((mut nl, link)) = container_link(req)? {
            apply::restore(&mut nl, &link, &backup?)?;
        }
        Ok(backup::remove(&path)?)
    }

    /// GC removes the backups of attachments not listed whose namespace
    /// is gone: nothing is left to restore them on.
    fn gc(&self, req: &Req) -> Result<(), BoxError> {
        let valid = req.valid_attachments()?;
        let Some(list) = valid.list() else {
            return Ok(());
        };
        let kept: Vec<String> = list
            .iter()
            .map(|a| format!("{}_{}.json", a.container_id, a.ifname))
            .collect();
        for path in backup::collect(&data_dir(&req.config.plugin), &kept)? {
            req.log(format!("tuning GC: removed {}", path.display()));
        }
        Ok(())
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let wanted = Wanted::read(req)?;
        previous(req)?;
        let netns = Netns::of(req)?;
        for s in &wanted.sysctl {
            let live = netns.sysctl(&s.name)?;
            if live != s.value {
                return Err(Error::new(
                    Code::INTERNAL,
                    format!(
                        "tuning configured value of {} is {}, current value is {live}",
                        s.name, s.value
                    ),
                )
                .into());
            }
        }
        let link = netns.socket()?.link(&req.ifname)?;
        Ok(apply::compare(&link, &wanted)?)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use cni_net::testing::TempNetns;
    use cni_version::PluginInfo;
    use serde_json::{json, Value};

    use super::*;

    /// A namespace with a veth pair, `ifname` inside.
    fn netns_with(ifname: &str) -> TempNetns {
        let ns = TempNetns::new("tuning").unwrap();
        ns.add_veth(ifname, "peer0", None).unwrap();
        ns
    }

    fn netns() -> TempNetns {
        netns_with("eth0")
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

    fn run_on(ns: &TempNetns, cmd: &str, ifname: &str, conf: &str) -> cni_skel::Outcome {
        ns.request(cmd, ifname)
            .stdin(conf.to_owned())
            .run(&Tuning, &PluginInfo::all())
    }

    fn run(ns: &TempNetns, cmd: &str, conf: &str) -> cni_skel::Outcome {
        run_on(ns, cmd, "eth0", conf)
    }

    /// The backup of `eth0` in `ns`.
    fn backup_of(ns: &TempNetns, dir: &Path) -> std::path::PathBuf {
        dir.join(format!("{}_eth0.json", ns.name()))
    }

    /// A request whose namespace does not exist: what is refused before
    /// the namespace is opened is refused without root.
    fn outside(cmd: &str, conf: &str) -> cni_skel::Outcome {
        cni_skel::TestRequest::new(cmd)
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/run/netns/tuning-test-absent")
            .env("CNI_IFNAME", "eth0")
            .stdin(conf.to_owned())
            .run(&Tuning, &PluginInfo::all())
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
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
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn ifname_in_a_sysctl_key_takes_any_name_the_kernel_takes() {
        for ifname in ["a+0", "a@x", "a\u{e9}", "eth0.100"] {
            let ns = netns_with(ifname);
            let dir = tempfile::tempdir().unwrap();
            let conf = conf(
                dir.path(),
                json!({"sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1"}}),
            );
            let out = run_on(&ns, "ADD", ifname, &conf);
            assert_eq!(out.exit_code, 0, "{ifname}: {:?}", out.error());
            let file = format!("/proc/sys/net/ipv4/conf/{ifname}/arp_notify");
            let live =
                ns.run(|_| std::fs::read_to_string(&file).map_err(|e| Error::io("read", &file, e)));
            assert_eq!(live.unwrap(), "1\n", "{ifname}");
            assert_eq!(run_on(&ns, "CHECK", ifname, &conf).exit_code, 0, "{ifname}");
        }
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
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
    fn bad_values_are_refused_naming_the_key_before_the_namespace_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        for (fields, code, msg) in [
            (
                json!({"sysctl": {"kernel.hostname": "x"}}),
                7,
                "kernel.hostname",
            ),
            (
                json!({"sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1\n"}}),
                7,
                "net.ipv4.conf.IFNAME.arp_notify",
            ),
            (
                json!({"sysctl": {"net.ipv4.ip_forward": "1\u{0}"}}),
                7,
                "net.ipv4.ip_forward",
            ),
            (
                json!({"args": {"cni": {"sysctl": {"net.ipv4.ip_forward": "0\n1"}}}}),
                7,
                "net.ipv4.ip_forward",
            ),
            (
                json!({"mac": "02:00:00:00:00"}),
                7,
                "invalid MAC address in mac",
            ),
            (
                json!({"mac": "00:00:00:00:00:00"}),
                7,
                "invalid MAC address in mac",
            ),
            (json!({"mtu": 67}), 7, "invalid mtu"),
            (json!({"args": {"cni": {"mtu": 65536}}}), 7, "invalid mtu"),
            (json!({"txQLen": 1000}), 2, "txQLen"),
        ] {
            let err = outside("ADD", &conf(dir.path(), fields.clone()))
                .error()
                .unwrap();
            assert_eq!(err.code, Code(code), "{fields}: {err:?}");
            assert!(err.msg.contains(msg), "{fields}: {err:?}");
        }
        let no_prev = json!({"cniVersion": "1.0.0", "name": "n", "type": "tuning"}).to_string();
        let err = outside("ADD", &no_prev).error().unwrap();
        assert_eq!(
            (err.code, err.msg.as_str()),
            (Code::INVALID_NETWORK_CONFIG, "Required prevResult missing")
        );
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_refused_add_changes_nothing() {
        let ns = netns();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let lo_key = "net.ipv4.conf.lo.arp_notify";
        let lo = ns.sysctl(lo_key).unwrap();
        let sysctl = json!({lo_key: if lo == "1" { "0" } else { "1" }});
        for (ifname, fields, code, msg) in [
            ("eth0", json!({"mtu": 20}), 7, "invalid mtu"),
            (
                "eth0",
                json!({"mac": "00:00:00:00:00:00"}),
                7,
                "invalid MAC",
            ),
            (
                "eth0",
                json!({"mtu": 1300, "dataDir": file}),
                7,
                "invalid dataDir",
            ),
            (
                "eth0",
                json!({"mtu": 1300, "sysctl": {"net.ipv4.conf.IFNAME.no_such": "1"}}),
                7,
                "invalid sysctl net.ipv4.conf.IFNAME.no_such",
            ),
            ("eth9", json!({"mtu": 1300}), 999, "link \"eth9\" not found"),
        ] {
            let mut fields = fields;
            let map = fields.as_object_mut().unwrap();
            let own = map.remove("sysctl");
            map.insert("sysctl".into(), own.unwrap_or_else(|| sysctl.clone()));
            let err = run_on(&ns, "ADD", ifname, &conf(dir.path(), fields.clone()))
                .error()
                .unwrap();
            assert_eq!(err.code, Code(code), "{fields}: {err:?}");
            assert!(err.msg.contains(msg), "{fields}: {err:?}");
            assert_eq!(ns.sysctl(lo_key).unwrap(), lo, "{fields}");
            assert_ne!(ns.socket().unwrap().link("eth0").unwrap().mtu, 1300);
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                1,
                "{fields}"
            );
        }
    }

    /// GC of network `n` over `dir`, with `cni.dev/valid-attachments` set
    /// to `valid` (left out when `None`).
    fn gc(dir: &Path, valid: Option<Value>) {
        let mut conf =
            json!({"cniVersion": "1.1.0", "name": "n", "type": "tuning", "dataDir": dir});
        if let Some(valid) = valid {
            conf["cni.dev/valid-attachments"] = valid;
        }
        let out = cni_skel::TestRequest::gc()
            .stdin(conf.to_string())
            .run(&Tuning, &PluginInfo::all());
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn gc_removes_the_backups_whose_namespace_is_gone_and_keeps_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let (live, gone) = (netns(), netns());
        let mac = conf(dir.path(), json!({"mac": "02:00:00:00:00:42"}));
        for ns in [&live, &gone] {
            assert_eq!(run(ns, "ADD", &mac).exit_code, 0);
        }
        let (live_backup, gone_backup) =
            (backup_of(&live, dir.path()), backup_of(&gone, dir.path()));
        drop(gone);
        gc(dir.path(), None);
        assert!(gone_backup.exists(), "no list: nothing removed");
        // `null`: libcni's empty list. The live namespace may be another
        // network's attachment, so its backup stays.
        gc(dir.path(), Some(Value::Null));
        assert!(!gone_backup.exists());
        assert!(live_backup.exists());
        assert_eq!(run(&live, "DEL", &mac).exit_code, 0);
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_second_add_keeps_the_first_backup_so_del_restores_the_originals() {
        let ns = netns();
        let dir = tempfile::tempdir().unwrap();
        let before = ns.socket().unwrap().link("eth0").unwrap();
        let first = conf(dir.path(), json!({"mtu": 1300}));
        assert_eq!(run(&ns, "ADD", &first).exit_code, 0);
        let second = conf(dir.path(), json!({"mtu": 1280, "mac": "02:00:00:00:00:09"}));
        assert_eq!(run(&ns, "ADD", &second).exit_code, 0);
        assert_eq!(run(&ns, "DEL", &second).exit_code, 0);
        let after = ns.socket().unwrap().link("eth0").unwrap();
        assert_eq!((after.mtu, after.mac), (before.mtu, before.mac));
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn the_backup_is_private_and_never_written_through_a_link() {
        let ns = netns();
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("tuning");
        let conf = conf(&dir, json!({"mtu": 1300}));
        assert_eq!(run(&ns, "ADD", &conf).exit_code, 0);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let backup = backup_of(&ns, &dir);
        assert_eq!(mode(&backup), 0o600);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        assert_eq!(run(&ns, "DEL", &conf).exit_code, 0);

        let victim = top.path().join("victim");
        std::fs::write(&victim, "{}").unwrap();
        std::os::unix::fs::symlink(&victim, &backup).unwrap();
        let err = run(&ns, "ADD", &conf).error().unwrap();
        assert_eq!(err.code, Code::IO_FAILURE, "{err:?}");
        assert!(err.msg.contains(&backup.display().to_string()), "{err:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "{}");
        assert_ne!(ns.socket().unwrap().link("eth0").unwrap().mtu, 1300);
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn del_reports_a_truncated_or_oversized_backup_naming_it() {
        let ns = netns();
        let dir = tempfile::tempdir().unwrap();
        let before = ns.socket().unwrap().link("eth0").unwrap().mtu;
        let conf = conf(dir.path(), json!({"mtu": 1300}));
        assert_eq!(run(&ns, "ADD", &conf).exit_code, 0);
        let backup = backup_of(&ns, dir.path());
        let whole = std::fs::read_to_string(&backup).unwrap();
        let oversized = format!("{}{whole}", " ".repeat(5000));
        for bad in [&whole[..whole.len() - 3], &oversized] {
            std::fs::write(&backup, bad).unwrap();
            let err = run(&ns, "DEL", &conf).error().unwrap();
            assert_eq!(err.code, Code::IO_FAILURE, "{err:?}");
            assert!(err.msg.contains(&backup.display().to_string()), "{err:?}");
            assert!(backup.exists(), "a bad backup stays for the operator");
        }
        std::fs::write(&backup, whole).unwrap();
        assert_eq!(run(&ns, "DEL", &conf).exit_code, 0);
        assert_eq!(ns.socket().unwrap().link("eth0").unwrap().mtu, before);
    }

    #[test]
    fn del_after_the_namespace_is_gone_removes_the_backup_even_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        // Absent, or the empty mount point a runtime leaves after
        // unmounting the namespace.
        let unmounted = dir.path().join("unmounted");
        std::fs::write(&unmounted, "").unwrap();
        for netns in [Path::new("/run/netns/tuning-test-absent"), &unmounted] {
            let backup = dir.path().join("c1_eth0.json");
            std::fs::write(&backup, "{\"mtu\": 15").unwrap();
            let out = cni_skel::TestRequest::new("DEL")
                .env("CNI_CONTAINERID", "c1")
                .env("CNI_NETNS", netns)
                .env("CNI_IFNAME", "eth0")
                .stdin(conf(dir.path(), json!({})))
                .run(&Tuning, &PluginInfo::all());
            assert_eq!(out.exit_code, 0, "{netns:?}: {:?}", out.error());
            assert!(!backup.exists(), "{netns:?}");
        }
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
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
