//! How many times a change lists its table: every `iptables-save` is a
//! process of a few milliseconds, so the firewall and the masquerading
//! list each table once per change, and not at all when nothing there
//! names what they would remove (Podman's chain, BENCHMARKS.md). The
//! commands are found on a `PATH` whose `iptables-save` and
//! `ip6tables-save` note each run, then run the host's; this file is its
//! own test binary with one test, so changing `PATH` races no other test.
//! In a namespace of the test's own. Needs root.

mod common;

use std::path::{Path, PathBuf};
use std::{env, fs};

use cni_netfilter::firewall::{self, IngressPolicy, Rules};
use cni_netfilter::masquerade::{self, Attachment};
use cni_netfilter::BackendKind;
use cni_types::IpNetwork;
use common::{netns, BoxError};

/// A directory of counting wrappers, removed when dropped.
struct Wrappers {
    dir: PathBuf,
}

impl Wrappers {
    /// `iptables-save` and `ip6tables-save` that append their name to
    /// `runs` and then run the command `PATH` found first.
    fn new() -> Wrappers {
        let dir = env::temp_dir().join(format!("cni-rs-listings-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let wrappers = Wrappers { dir };
        for name in ["iptables-save", "ip6tables-save"] {
            let real = find(name).unwrap_or_else(|| panic!("{name} is not on PATH"));
            let script = format!(
                "#!/bin/sh\necho {name} >> {runs}\nexec {real} \"$@\"\n",
                runs = wrappers.runs().display(),
                real = real.display(),
            );
            let path = wrappers.dir.join(name);
            fs::write(&path, script).unwrap();
            let mut mode = fs::metadata(&path).unwrap().permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
            fs::set_permissions(&path, mode).unwrap();
        }
        wrappers
    }

    fn runs(&self) -> PathBuf {
        self.dir.join("runs")
    }

    /// The runs noted since the last call, by command.
    fn take(&self) -> (usize, usize) {
        let text = fs::read_to_string(self.runs()).unwrap_or_default();
        let _ = fs::remove_file(self.runs());
        let v4 = text.lines().filter(|l| *l == "iptables-save").count();
        let v6 = text.lines().filter(|l| *l == "ip6tables-save").count();
        (v4, v6)
    }
}

impl Drop for Wrappers {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn find(name: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| Path::is_file(p))
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn firewall_and_masquerading_list_each_table_once_per_change() {
    let wrappers = Wrappers::new();
    let path = env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![wrappers.dir.clone()];
    dirs.extend(env::split_paths(&path));
    env::set_var("PATH", env::join_paths(dirs).unwrap());

    let ns = netns("listings");
    let addresses: Vec<IpNetwork> = vec!["10.89.0.5/24".parse().unwrap()];
    let attachment = Attachment {
        network: "podbench",
        ifname: "eth0",
        container_id: "ctr-listings",
    };
    let rules = Rules {
        attachment,
        addresses: &addresses,
        admin_chain: firewall::DEFAULT_ADMIN_CHAIN,
        policy: IngressPolicy::SameBridge,
        bridge: Some("cni-podman1"),
    };
    let counts = ns
        .run(|_| {
            let mut counts = Vec::new();
            masquerade::setup(Some(BackendKind::Iptables), &addresses, &attachment)?;
            counts.push(("masquerading ADD", wrappers.take()));
            masquerade::setup(Some(BackendKind::Iptables), &addresses, &attachment)?;
            counts.push(("masquerading ADD again", wrappers.take()));
            firewall::add(BackendKind::Iptables, &rules)?;
            wrappers.take();
            firewall::del(&rules, false)?;
            counts.push(("firewall DEL of a container", wrappers.take()));
            firewall::add(BackendKind::Iptables, &rules)?;
            wrappers.take();
            firewall::del(&rules, true)?;
            counts.push((
                "firewall DEL of the bridge's last container",
                wrappers.take(),
            ));
            let open = Rules {
                policy: IngressPolicy::Open,
                ..rules
            };
            firewall::add(BackendKind::Iptables, &open)?;
            counts.push(("firewall ADD without isolation", wrappers.take()));
            firewall::del(&open, true)?;
            counts.push((
                "firewall DEL of the last container of a bridge without isolation",
                wrappers.take(),
            ));
            firewall::forget_bridge("cni-podman1")?;
            counts.push(("forgetting a bridge with no rules left", wrappers.take()));
            firewall::add(BackendKind::Iptables, &rules)?;
            wrappers.take();
            firewall::forget_bridge("cni-podman1")?;
            counts.push(("forgetting a bridge an ADD isolated", wrappers.take()));
            masquerade::teardown(&addresses, &attachment)?;
            counts.push(("masquerading DEL", wrappers.take()));
            masquerade::teardown(&addresses, &attachment)?;
            counts.push(("masquerading DEL again", wrappers.take()));
            Ok::<_, BoxError>(counts)
        })
        .unwrap();
    env::set_var("PATH", path);
    assert_eq!(
        counts,
        [
            // A new attachment: nothing names its chain, nothing to list.
            ("masquerading ADD", (0, 0)),
            // Its chain and rules found as written, through nf_tables
            // (`IptablesBackend::ensure_directly`, iptables-nft).
            ("masquerading ADD again", (0, 0)),
            // Its two rules deleted as written, without a listing
            // (`IptablesBackend::delete_expected`).
            ("firewall DEL of a container", (0, 0)),
            ("firewall DEL of the bridge's last container", (1, 0)),
            // Podman's default network: every rule written and deleted
            // through nf_tables, nothing names the bridge.
            ("firewall ADD without isolation", (0, 0)),
            (
                "firewall DEL of the last container of a bridge without isolation",
                (0, 0),
            ),
            // Nothing in either table names the bridge or the chain: no
            // listing at all (`cni_netfilter::iptables::may_mention`).
            ("forgetting a bridge with no rules left", (0, 0)),
            ("forgetting a bridge an ADD isolated", (1, 0)),
            // Its chain and the jump to it, through nf_tables
            // (`IptablesBackend::remove_chains_directly`).
            ("masquerading DEL", (0, 0)),
            ("masquerading DEL again", (0, 0)),
        ]
    );
}
