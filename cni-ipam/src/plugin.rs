//! The IPAM plugin: ADD, DEL, CHECK, GC and STATUS over any [`Store`].
//!
//! - **ADD** reserves one address per range set and returns them with their
//!   gateways, the configured `routes`, and the DNS of `resolvConf` when
//!   given (host-local's only DNS source), in the configuration's version.
//!   An attachment `(CNI_CONTAINERID, CNI_IFNAME)` that already holds an
//!   address gets it again. Addresses can be requested through `args.cni.ips`
//!   or `runtimeConfig.ips`, else `CNI_ARGS` `IP=`; see
//!   [`crate::config::requested_ips`].
//! - **DEL** releases the attachment's reservations; nothing held is fine.
//! - **CHECK** fails with [`NOT_RESERVED`] unless the attachment holds an
//!   address in every range set.
//! - **GC** releases the reservations of attachments that are not valid
//!   ([`crate::gc`]); without `cni.dev/valid-attachments` it releases
//!   nothing and says so on stderr.
//! - **STATUS** answers code 50 while a range set has no free address (ADD
//!   would fail) or the store cannot be read, naming it.
//!
//! Entries of the store that are not what their names say are named on
//! stderr and skipped.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use cni_skel::{BoxError, Plugin, Reply, Request};
use cni_types::{Code, Dns, Error, IpConfig, IpNetwork, NetConf, Result100, SpecVersion};

use crate::config::{self, IpamConfig};
use crate::plan::{self, Assigned, Attachment};
use crate::store::{Access, Reservation, Reserved, State, Store};
use crate::{dns, gc, NOT_RESERVED};

/// How long an ADD keeps re-planning when addresses it chose are taken by
/// other nodes meanwhile; then code 11.
const CONTENTION_LIMIT: Duration = Duration::from_secs(10);

/// An IPAM plugin keeping its reservations in a store of type `S`.
///
/// ```no_run
/// #![no_main]
/// use cni_ipam::{store::file::FileStore, Ipam};
///
/// cni_skel::plugin_main!(
///     Ipam::<FileStore>::new("ipam-file"),
///     cni_version::PluginInfo::all(),
///     "CNI ipam-file plugin v0.1.0"
/// );
/// ```
pub struct Ipam<S> {
    name: &'static str,
    store: PhantomData<fn() -> S>,
}

impl<S> Ipam<S> {
    /// The plugin; `name` prefixes what it writes on stderr.
    pub const fn new(name: &'static str) -> Ipam<S> {
        Ipam {
            name,
            store: PhantomData,
        }
    }
}

impl<S> std::fmt::Debug for Ipam<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ipam").field("name", &self.name).finish()
    }
}

impl<S: Store> Ipam<S> {
    /// Reads the store, naming what it skipped on stderr.
    fn read(&self, req: &Request<NetConf>, store: &mut S, sets: usize) -> Result<State, Error> {
        let state = store.read(sets)?;
        for skipped in &state.skipped {
            req.log(format!("{}: {skipped}", self.name));
        }
        Ok(state)
    }
}

/// How far past the next free address to look after losing `lost` races:
/// 0 at first (host-local's order), then a random distance in a window
/// that doubles, up to 64, so that contenders spread out.
fn spread(lost: u32) -> usize {
    use std::hash::{BuildHasher, Hasher};
    if lost == 0 {
        return 0;
    }
    // RandomState is seeded per process: a different draw in every plugin.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(lost);
    let window = 4usize << lost.min(4);
    (h.finish() % window as u64) as usize
}

impl<S: Store> Plugin for Ipam<S> {
    type Config = NetConf;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let requested = config::requested_ips(&req.config, &req.args)?;
        let dns = match &cfg.resolv_conf {
            Some(path) => dns::read_resolv_conf(path)?,
            None => Dns::default(),
        };
        let attachment = Attachment::new(&req.container_id, &req.ifname);
        let mut store = S::open(&cfg, Access::Create)?
            .ok_or_else(|| Error::new(Code::INTERNAL, "store not created"))?;
        let sets = cfg.range_sets.len();
        let started = Instant::now();
        let mut state = self.read(req, &mut store, sets)?;
        // Under a lock, a planned address is free unless something ignores
        // the lock; without one (etcd), another node may have won it. Either
        // way it now shows as held: read again and re-plan.
        let mut lost = 0u32;
        let plan = loop {
            let plan = plan::plan_skipping(&cfg, &state, &attachment, &requested, spread(lost))?;
            let new: Vec<Assigned> = plan.iter().filter(|a| a.new).cloned().collect();
            if new.is_empty() {
                break plan;
            }
            match store.reserve(&new, &attachment)? {
                Reserved::Done => break plan,
                Reserved::Taken(_) if started.elapsed() < CONTENTION_LIMIT => {
                    lost += 1;
                    state = store.read(sets)?;
                }
                Reserved::Taken(ip) => {
                    return Err(Error::new(
                        Code::TRY_AGAIN_LATER,
                        format!("addresses kept being taken while reserving (last {ip})"),
                    )
                    .with_details(format!("in {} for {CONTENTION_LIMIT:?}", store.describe()))
                    .into())
                }
            }
        };
        drop(store);

        let mut result = Result100::new(SpecVersion::V1_1_0);
        for a in &plan {
            let address = IpNetwork::new(a.ip, a.prefix).ok_or_else(|| {
                Error::new(
                    Code::INTERNAL,
                    format!("bad prefix /{} for {}", a.prefix, a.ip),
                )
            })?;
            result.ips.push(IpConfig::new(address, Some(a.gateway)));
        }
        result.routes = cfg.routes;
        result.dns = dns;
        Ok(result.into())
    }

    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let Some(mut store) = S::open(&cfg, Access::Change)? else {
            return Ok(());
        };
        let state = self.read(req, &mut store, cfg.range_sets.len())?;
        let mut mine: Vec<&Reservation> = state
            .held
            .iter()
            .filter(|r| r.held_by(&req.container_id, &req.ifname))
            .collect();
        if mine.is_empty() {
            // As host-local: reservations from before the interface name
            // was recorded belong to the container.
            mine = state
                .held
                .iter()
                .filter(|r| r.held_by_legacy(&req.container_id))
                .collect();
        }
        if !mine.is_empty() {
            store.release(&mine)?;
        }
        Ok(())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let attachment = Attachment::new(&req.container_id, &req.ifname);
        let (held, place) = match S::open(&cfg, Access::Read)? {
            Some(mut store) => (
                self.read(req, &mut store, cfg.range_sets.len())?.held,
                store.describe(),
            ),
            None => (Vec::new(), "the store".to_owned()),
        };
        let mine: Vec<&Reservation> = held.iter().filter(|r| attachment.holds(r)).collect();
        for set in &cfg.range_sets {
            if !mine.iter().any(|r| set.contains(r.ip)) {
                return Err(Error::new(
                    NOT_RESERVED,
                    format!(
                        "no address reserved for container {:?}, interface {:?} in range set {} ({set})",
                        req.container_id, req.ifname, set.field
                    ),
                )
                .with_details(format!(
                    "{place} holds {}",
                    if mine.is_empty() {
                        "nothing for it".to_owned()
                    } else {
                        mine.iter().map(|r| r.ip.to_string()).collect::<Vec<_>>().join(", ")
                    }
                ))
                .into());
            }
        }
        Ok(())
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let valid = req.valid_attachments()?;
        if valid.is_unspecified() {
            req.log(format!(
                "{}: GC without cni.dev/valid-attachments: the runtime did not say which \
                 attachments are in use, so nothing is released",
                self.name
            ));
            return Ok(());
        }
        let Some(mut store) = S::open(&cfg, Access::Change)? else {
            return Ok(());
        };
        let state = self.read(req, &mut store, cfg.range_sets.len())?;
        let stale = gc::stale(&state.held, &valid);
        if !stale.is_empty() {
            store.release(&stale)?;
        }
        Ok(())
    }

    fn status(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let (held, place) = match S::open(&cfg, Access::Read).and_then(|store| match store {
            Some(mut store) => Ok((store.held_addresses()?, store.describe())),
            None => Ok((Vec::new(), String::new())),
        }) {
            Ok(found) => found,
            Err(e) => {
                return Err(Error::new(
                    Code::PLUGIN_NOT_AVAILABLE,
                    format!("cannot read the reservations: {}", e.msg),
                )
                .with_details(e.details)
                .into())
            }
        };
        let full = plan::exhausted_sets(&cfg, &held);
        if full.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = full
            .iter()
            .map(|&i| format!("{} ({})", cfg.range_sets[i].field, cfg.range_sets[i]))
            .collect();
        Err(Error::new(
            Code::PLUGIN_NOT_AVAILABLE,
            format!("no free address in range set {}", names.join(", ")),
        )
        .with_details(format!("{} addresses held in {place}", held.len()))
        .into())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use cni_skel::{Outcome, TestRequest};
    use cni_version::PluginInfo;
    use serde_json::{json, Value};

    use super::*;
    use crate::store::file::FileStore;
    use crate::{ADDRESS_NOT_ALLOCATABLE, ADDRESS_UNAVAILABLE, RANGE_EXHAUSTED};

    #[allow(non_upper_case_globals)]
    const IpamFile: Ipam<FileStore> = Ipam::new("ipam-file");

    /// A fresh directory, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            static N: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "ipam-file-unit-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        /// The network directory of the `net` network.
        fn net(&self) -> PathBuf {
            self.0.join("net")
        }

        /// `name -> content` of every file of the network directory.
        fn files(&self) -> Vec<(String, String)> {
            let mut out: Vec<(String, String)> = std::fs::read_dir(self.net())
                .map(|rd| {
                    rd.flatten()
                        .map(|e| {
                            (
                                e.file_name().to_string_lossy().into_owned(),
                                std::fs::read_to_string(e.path()).unwrap_or_default(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.sort();
            out
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A configuration of the `net` network with this `ipam` section (the
    /// data directory filled in) and these other top-level keys.
    fn conf(dir: &TempDir, version: &str, ipam: Value, extra: Value) -> String {
        let mut ipam = ipam;
        ipam["type"] = json!("ipam-file");
        if ipam.get("dataDir").is_none() {
            ipam["dataDir"] = json!(dir.0);
        }
        let mut c = json!({"cniVersion": version, "name": "net", "type": "bridge", "ipam": ipam});
        if let Value::Object(extra) = extra {
            c.as_object_mut().unwrap().extend(extra);
        }
        c.to_string()
    }

    fn v4(dir: &TempDir) -> String {
        conf(
            dir,
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]]}),
            json!({}),
        )
    }

    fn run(cmd: &str, id: &str, stdin: &str) -> Outcome {
        run_args(cmd, id, stdin, "")
    }

    fn run_args(cmd: &str, id: &str, stdin: &str, cni_args: &str) -> Outcome {
        let mut req = TestRequest::new(cmd)
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(stdin);
        if !matches!(cmd, "GC" | "STATUS") {
            req = req
                .env("CNI_CONTAINERID", id)
                .env("CNI_NETNS", "/var/run/netns/x")
                .env("CNI_IFNAME", "eth0");
        }
        if !cni_args.is_empty() {
            req = req.env("CNI_ARGS", cni_args);
        }
        req.run(&IpamFile, &PluginInfo::all())
    }

    fn ok(out: &Outcome) {
        assert_eq!(
            out.exit_code,
            0,
            "{} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn address(out: &Outcome, i: usize) -> String {
        ok(out);
        out.json()["ips"][i]["address"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn err(out: &Outcome) -> Error {
        out.error().unwrap_or_else(|| {
            panic!(
                "expected an error, got {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    #[test]
    fn first_addresses_follow_host_local_and_files_use_its_format() {
        let dir = TempDir::new();
        let stdin = conf(
            &dir,
            "1.0.0",
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "2001:db8:1::/64"}]],
                   "routes": [{"dst": "0.0.0.0/0"}]}),
            json!({}),
        );
        let out = run("ADD", "c1", &stdin);
        ok(&out);
        assert_eq!(
            out.json(),
            json!({"cniVersion": "1.0.0",
                "ips": [{"address": "10.1.2.2/24", "gateway": "10.1.2.1"},
                        {"address": "2001:db8:1::2/64", "gateway": "2001:db8:1::1"}],
                "routes": [{"dst": "0.0.0.0/0"}]})
        );
        assert_eq!(address(&run("ADD", "c2", &stdin), 0), "10.1.2.3/24");
        let held = |ip: &str, owner: &str| (ip.to_owned(), owner.to_owned());
        assert_eq!(
            dir.files(),
            [
                held("10.1.2.2", "c1\r\neth0"),
                held("10.1.2.3", "c2\r\neth0"),
                held("2001:db8:1::2", "c1\r\neth0"),
                held("2001:db8:1::3", "c2\r\neth0"),
                held("last_reserved_ip.0", "10.1.2.3"),
                held("last_reserved_ip.1", "2001:db8:1::3"),
                held("lock", ""),
            ]
        );
    }

    #[test]
    fn a_repeated_add_returns_the_address_held() {
        let dir = TempDir::new();
        let a = address(&run("ADD", "c1", &v4(&dir)), 0);
        assert_eq!(address(&run("ADD", "c1", &v4(&dir)), 0), a);
        assert_eq!(dir.files().len(), 3, "{:?}", dir.files());
    }

    #[test]
    fn an_explicit_gateway_frees_the_first_address_and_is_never_allocated() {
        let dir = TempDir::new();
        let stdin = conf(
            &dir,
            "1.0.0",
            json!({"subnet": "10.3.0.0/29", "gateway": "10.3.0.6"}),
            json!({}),
        );
        let got: Vec<String> = (0..5)
            .map(|i| address(&run("ADD", &format!("c{i}"), &stdin), 0))
            .collect();
        assert_eq!(
            got,
            [
                "10.3.0.1/29",
                "10.3.0.2/29",
                "10.3.0.3/29",
                "10.3.0.4/29",
                "10.3.0.5/29"
            ]
        );
        let out = run("ADD", "c5", &stdin);
        assert_eq!(err(&out).code, RANGE_EXHAUSTED, "{out:?}");
    }

    #[test]
    fn del_releases_and_succeeds_when_nothing_is_held() {
        let dir = TempDir::new();
        let stdin = v4(&dir);
        ok(&run("DEL", "c1", &stdin));
        assert!(!dir.net().exists(), "DEL created the data directory");
        address(&run("ADD", "c1", &stdin), 0);
        ok(&run("DEL", "c1", &stdin));
        ok(&run("DEL", "c1", &stdin));
        assert!(dir.files().iter().all(|(n, _)| !n.starts_with("10.")));
    }

    #[test]
    fn check_fails_when_the_reservation_is_missing() {
        let dir = TempDir::new();
        let stdin = v4(&dir);
        let e = err(&run("CHECK", "c1", &stdin));
        assert_eq!(e.code, NOT_RESERVED);
        assert!(e.msg.contains("\"c1\""), "{e:?}");
        address(&run("ADD", "c1", &stdin), 0);
        ok(&run("CHECK", "c1", &stdin));
        ok(&run("DEL", "c1", &stdin));
        assert_eq!(err(&run("CHECK", "c1", &stdin)).code, NOT_RESERVED);
    }

    #[test]
    fn status_is_code_50_when_a_range_set_is_exhausted() {
        let dir = TempDir::new();
        // A /30 has .1 (gateway) and .2.
        let stdin = conf(
            &dir,
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.9.0.0/30"}]]}),
            json!({}),
        );
        ok(&run("STATUS", "", &stdin));
        assert_eq!(address(&run("ADD", "c1", &stdin), 0), "10.9.0.2/30");
        let e = err(&run("STATUS", "", &stdin));
        assert_eq!(e.code, Code::PLUGIN_NOT_AVAILABLE);
        assert!(e.msg.contains("10.9.0.1-10.9.0.2"), "{e:?}");
        ok(&run("DEL", "c1", &stdin));
        ok(&run("STATUS", "", &stdin));
    }

    #[test]
    fn requested_addresses_args_win_over_cni_args() {
        let dir = TempDir::new();
        let with_args = conf(
            &dir,
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]]}),
            json!({"args": {"cni": {"ips": ["10.1.2.42/24"]}}}),
        );
        let out = run_args("ADD", "c1", &with_args, "IgnoreUnknown=1;IP=10.1.2.43");
        assert_eq!(address(&out, 0), "10.1.2.42/24");
        let out = run_args("ADD", "c2", &v4(&dir), "K8S_POD_NAME=x;IP=10.1.2.43");
        assert_eq!(address(&out, 0), "10.1.2.43/24");
        // The same request again is the same reservation.
        let out = run_args("ADD", "c2", &v4(&dir), "IP=10.1.2.43");
        assert_eq!(address(&out, 0), "10.1.2.43/24");
    }

    #[test]
    fn unusable_requested_addresses_are_errors_naming_them() {
        let dir = TempDir::new();
        address(&run_args("ADD", "c1", &v4(&dir), "IP=10.1.2.42"), 0);
        for (args, code, text) in [
            (
                "IP=10.1.2.42",
                ADDRESS_UNAVAILABLE,
                "10.1.2.42 (CNI_ARGS IP)",
            ),
            (
                "IP=10.9.9.9",
                ADDRESS_NOT_ALLOCATABLE,
                "10.9.9.9 (CNI_ARGS IP)",
            ),
            ("IP=10.1.2.255", ADDRESS_NOT_ALLOCATABLE, "10.1.2.255"),
            ("IP=10.1.2.1", ADDRESS_NOT_ALLOCATABLE, "gateway"),
            ("IP=2001:db8::1", ADDRESS_NOT_ALLOCATABLE, "2001:db8::1"),
            (
                "IP=nope",
                Code::INVALID_ENVIRONMENT_VARIABLES,
                "CNI_ARGS IP",
            ),
        ] {
            let e = err(&run_args("ADD", "c2", &v4(&dir), args));
            assert_eq!(e.code, code, "{args}: {e:?}");
            assert!(e.msg.contains(text), "{args}: {e:?}");
        }
        let taken = err(&run_args("ADD", "c2", &v4(&dir), "IP=10.1.2.42"));
        assert!(taken.details.contains("\"c1\""), "{taken:?}");
        let bad = conf(
            &dir,
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]]}),
            json!({"args": {"cni": {"ips": ["10.1.2.7", "x"]}}}),
        );
        let e = err(&run("ADD", "c2", &bad));
        assert_eq!(
            (e.code, e.msg.as_str()),
            (Code::INVALID_NETWORK_CONFIG, "invalid args.cni.ips[1]")
        );
        // Nothing of c2 was written by any of these.
        assert!(dir.files().iter().all(|(_, c)| !c.starts_with("c2")));
    }

    #[test]
    fn ip_ranges_capability_replaces_the_configured_ranges() {
        let dir = TempDir::new();
        let stdin = conf(
            &dir,
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]]}),
            json!({"runtimeConfig": {"ipRanges": [[{"subnet": "10.77.0.0/16", "rangeStart": "10.77.3.10"}]]}}),
        );
        let out = run("ADD", "c1", &stdin);
        assert_eq!(address(&out, 0), "10.77.3.10/16");
        assert_eq!(out.json()["ips"][0]["gateway"], "10.77.0.1");
        assert_eq!(out.json()["ips"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn a_failed_add_writes_nothing() {
        let dir = TempDir::new();
        // Set 1 (a /30) is full once c1 holds .2; c2 must not keep set 0's.
        let stdin = conf(
            &dir,
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.9.0.0/30"}]]}),
            json!({}),
        );
        ok(&run("ADD", "c1", &stdin));
        let before = dir.files();
        let e = err(&run("ADD", "c2", &stdin));
        assert_eq!(e.code, RANGE_EXHAUSTED);
        assert!(e.msg.contains("ipam.ranges[1]"), "{e:?}");
        assert_eq!(dir.files(), before);
    }

    #[test]
    fn invalid_configurations_are_code_7_naming_the_field_and_touch_nothing() {
        let dir = TempDir::new();
        for (ipam, msg, value) in [
            (json!({}), "invalid ipam.ranges", "missing"),
            (json!({"ranges": []}), "invalid ipam.ranges", "missing"),
            (json!({"ranges": [[]]}), "invalid ipam.ranges[0]", "empty"),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/33"}]]}),
                "invalid ipam.ranges[0][0].subnet",
                "10.1.2.0/33",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.5/24"}]]}),
                "invalid ipam.ranges[0][0].subnet",
                "10.1.2.0",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/31"}]]}),
                "invalid ipam.ranges[0][0].subnet",
                "too small",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "10.1.3.0/24", "rangeStart": "10.1.4.1"}]]}),
                "invalid ipam.ranges[0][1].rangeStart",
                "10.1.4.1",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24", "rangeEnd": "10.1.2.300"}]]}),
                "invalid ipam.ranges[0][0].rangeEnd",
                "10.1.2.300",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24", "gateway": "10.1.3.1"}]]}),
                "invalid ipam.ranges[0][0].gateway",
                "10.1.3.1",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24", "rangeStart": "10.1.2.9", "rangeEnd": "10.1.2.8"}]]}),
                "invalid ipam.ranges[0][0].rangeStart",
                "after rangeEnd",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "10.1.2.0/25"}]]}),
                "invalid ipam.ranges[0][1]",
                "overlaps ipam.ranges[0][0]",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "2001:db8::/64"}]]}),
                "invalid ipam.ranges[0][1].subnet",
                "mixed",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.0.0/16"}]]}),
                "invalid ipam.ranges[1]",
                "overlaps range set ipam.ranges[0]",
            ),
            (
                json!({"subnet": "10.1.2.0/24", "ranges": [[{"subnet": "10.1.2.128/25"}]]}),
                "invalid ipam.ranges[0]",
                "overlaps range set ipam ",
            ),
            (
                json!({"ranges": [[{"subnet": 10}]]}),
                "invalid ipam.ranges[0][0].subnet",
                "10",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "routes": [{"dst": "nope"}]}),
                "invalid ipam.routes[0]",
                "nope",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "dataDir": 5}),
                "invalid ipam.dataDir",
                "5",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "store": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"]}}),
                "invalid ipam.store.type",
                "ipam-etcd",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "store": {"type": "consul"}}),
                "invalid ipam.store.type",
                "consul",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "store": {"type": "etcd", "endpoints": ["https://e:2379"]}}),
                "invalid ipam.store.endpoints[0]",
                "TLS",
            ),
            (
                json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "store": {"type": "etcd", "endpoints": []}}),
                "invalid ipam.store.endpoints",
                "non-empty",
            ),
        ] {
            let e = err(&run(
                "ADD",
                "c1",
                &conf(&dir, "1.1.0", ipam.clone(), json!({})),
            ));
            assert_eq!(
                (e.code, e.msg.as_str()),
                (Code::INVALID_NETWORK_CONFIG, msg),
                "{ipam}: {e:?}"
            );
            assert!(e.details.contains(value), "{ipam}: {e:?}");
        }
        let bad_runtime = conf(
            &dir,
            "1.1.0",
            json!({}),
            json!({"runtimeConfig": {"ipRanges": [[{"subnet": "10.1.2.0/24", "gateway": "x"}]]}}),
        );
        let e = err(&run("ADD", "c1", &bad_runtime));
        assert_eq!(e.msg, "invalid runtimeConfig.ipRanges[0][0].gateway");
        let no_ipam = json!({"cniVersion": "1.1.0", "name": "net", "type": "x"}).to_string();
        assert_eq!(err(&run("DEL", "c1", &no_ipam)).msg, "invalid ipam");
        assert!(dir.files().is_empty(), "{:?}", dir.files());
    }

    #[test]
    fn old_versions_allow_one_address_per_family_and_convert() {
        let dir = TempDir::new();
        let two = json!({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.3.0/24"}]]});
        let e = err(&run(
            "ADD",
            "c1",
            &conf(&dir, "0.2.0", two.clone(), json!({})),
        ));
        assert_eq!(e.code, Code::INVALID_NETWORK_CONFIG);
        let out = run("ADD", "c1", &conf(&dir, "0.4.0", two, json!({})));
        ok(&out);
        assert_eq!(out.json()["ips"][1]["version"], "4");
        assert_eq!(out.json()["ips"][1]["address"], "10.1.3.2/24");
    }

    #[test]
    fn resolv_conf_becomes_the_result_dns() {
        let dir = TempDir::new();
        let resolv = dir.0.join("resolv.conf");
        std::fs::write(
            &resolv,
            "# comment\nnameserver 10.0.0.53\nnameserver 10.0.0.54\ndomain example.com\nsearch a.b c.d\noptions ndots:2\n",
        )
        .unwrap();
        let stdin = conf(
            &dir,
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "resolvConf": resolv}),
            json!({}),
        );
        let out = run("ADD", "c1", &stdin);
        ok(&out);
        assert_eq!(
            out.json()["dns"],
            json!({"nameservers": ["10.0.0.53", "10.0.0.54"], "domain": "example.com",
                   "search": ["a.b", "c.d"], "options": ["ndots:2"]})
        );
        let missing = conf(
            &dir,
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.1.2.0/24"}]], "resolvConf": dir.0.join("nope")}),
            json!({}),
        );
        assert_eq!(err(&run("ADD", "c2", &missing)).code, Code::IO_FAILURE);
    }

    /// `v4(dir)` for GC, with `cni.dev/valid-attachments` set to `valid`
    /// (left out when `None`).
    fn gc_conf(dir: &TempDir, valid: Option<Value>) -> String {
        let mut gc: Value = serde_json::from_str(&v4(dir)).unwrap();
        if let Some(valid) = valid {
            gc["cni.dev/valid-attachments"] = valid;
        }
        gc.to_string()
    }

    /// c1 and c2 on eth0 (.2, .3), c1 on eth1 (.4), and an older host-local
    /// reservation of container `old` (.9).
    fn several_containers(dir: &TempDir) {
        let stdin = v4(dir);
        address(&run("ADD", "c1", &stdin), 0);
        address(&run("ADD", "c2", &stdin), 0);
        let eth1 = TestRequest::new("ADD")
            .env("CNI_PATH", "/usr/lib/cni")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/var/run/netns/x")
            .env("CNI_IFNAME", "eth1")
            .stdin(stdin.as_str())
            .run(&IpamFile, &PluginInfo::all());
        assert_eq!(address(&eth1, 0), "10.1.2.4/24");
        std::fs::write(dir.net().join("10.1.2.9"), "old").unwrap();
    }

    #[test]
    fn gc_without_valid_attachments_absent_or_null_releases_nothing_and_says_so() {
        let dir = TempDir::new();
        several_containers(&dir);
        let before = dir.files();
        for valid in [None, Some(Value::Null)] {
            let out = run("GC", "", &gc_conf(&dir, valid.clone()));
            ok(&out);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("nothing is released"),
                "{valid:?}: {stderr}"
            );
            assert_eq!(dir.files(), before, "{valid:?}");
        }
    }
}
