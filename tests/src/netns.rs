//! Network namespaces and links for the tests that need real ones (root
//! and iproute2 required), read through `ip -j`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::Value;

use crate::process::{output_of, RawOutput, StdoutJson};

/// Panics with a clear message unless this process runs as root and
/// `ip` (iproute2) works: the namespace tests create network namespaces and
/// links. CI runs as root; elsewhere run them with `sudo -E cargo test`.
pub fn require_root_and_ip() {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .unwrap_or("?");
    if euid != "0" {
        panic!(
            "this test creates network namespaces and needs root (effective uid is {euid}); \
             run it as root (CI does), e.g. `sudo -E cargo test -p tests`"
        );
    }
    match Command::new("ip").arg("-V").stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("`ip -V` failed ({}): install iproute2", out.status),
        Err(e) => panic!("cannot run `ip` ({e}): install iproute2 (`apt-get install iproute2`)"),
    }
}

/// Runs `ip ARGS...`; returns the outcome (never panics on failure).
pub fn ip(args: &[&str]) -> RawOutput {
    output_of(Command::new("ip").args(args), b"")
}

/// A network namespace `cni-rs-test-<pid>-<tag>` (made with `ip netns
/// add`) that is deleted when dropped, even when the test panics, together
/// with any host links registered with [`NetNs::delete_link_on_drop`].
#[derive(Debug)]
pub struct NetNs {
    name: String,
    host_links: Mutex<Vec<String>>,
}

impl NetNs {
    /// Creates the namespace (replacing a leftover of the same name).
    ///
    /// # Panics
    /// Via [`require_root_and_ip`] when not root or `ip` is missing, or if
    /// `ip netns add` fails.
    pub fn create(tag: &str) -> NetNs {
        require_root_and_ip();
        let name = format!("cni-rs-test-{}-{tag}", std::process::id());
        let _ = ip(&["netns", "del", &name]);
        let out = ip(&["netns", "add", &name]);
        if !out.success() {
            panic!("`ip netns add {name}` failed: {out:?}");
        }
        NetNs {
            name,
            host_links: Mutex::default(),
        }
    }

    /// The namespace's name (for `ip -n`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's path, as `CNI_NETNS`: `/var/run/netns/<name>`.
    pub fn path(&self) -> String {
        format!("/var/run/netns/{}", self.name)
    }

    /// Also deletes the host link `name` (e.g. a bridge a plugin creates)
    /// when this guard is dropped; deletes a leftover of it right away.
    pub fn delete_link_on_drop(&self, name: &str) {
        delete_host_link(name);
        self.host_links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.to_owned());
    }

    /// `ip -n <name> -j addr`: every link in the namespace with its
    /// addresses.
    ///
    /// # Panics
    /// If `ip` fails or prints no JSON.
    pub fn addrs(&self) -> Value {
        let out = ip(&["-n", &self.name, "-j", "addr"]);
        if !out.success() {
            panic!("`ip -n {} -j addr` failed: {out:?}", self.name);
        }
        out.stdout_json()
    }

    /// The link `ifname` in the namespace as [`NetNs::addrs`] shows it, or
    /// `None`; [`link_is_up`] and [`global_addrs`] read it.
    pub fn link(&self, ifname: &str) -> Option<Value> {
        self.addrs()
            .as_array()
            .into_iter()
            .flatten()
            .find(|l| l["ifname"] == ifname)
            .cloned()
    }
}

/// A script in `dir` named like `plugin` that runs it inside `host`
/// (`ip netns exec`), so a plugin's host side (links, packet filter
/// rules) lands in a namespace of the test; put `dir` on `CNI_PATH`.
///
/// # Panics
/// If the script cannot be written.
pub fn in_host_namespace(dir: &Path, plugin: &Path, host: &NetNs) -> PathBuf {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let name = plugin.file_name().expect("a file name");
    let wrapper = dir.join(name);
    let mut file = std::fs::File::create(&wrapper).expect("create the wrapper");
    writeln!(
        file,
        "#!/bin/sh\nexec ip netns exec {} {}",
        host.name(),
        plugin.display()
    )
    .expect("write the wrapper");
    drop(file);
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .expect("make the wrapper executable");
    wrapper
}

/// Whether a link, as `ip -j addr` shows it, is administratively up.
pub fn link_is_up(link: &Value) -> bool {
    link["flags"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == "UP"))
}

/// The addresses of a link, as `ip -j addr` shows it, as `a.b.c.d/len`;
/// link-local ones are left out (IPv6 derives them from a random MAC).
pub fn global_addrs(link: &Value) -> Vec<String> {
    link["addr_info"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["scope"] != "link")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap_or("?"), a["prefixlen"]))
        .collect()
}

impl Drop for NetNs {
    fn drop(&mut self) {
        for link in self
            .host_links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            delete_host_link(link);
        }
        // As cni_net::testing::TempNetns does: the SDK's state kept for
        // this namespace (its rule records) goes with it.
        cni_net::testing::remove_namespace_state(self.path().as_ref());
        let out = ip(&["netns", "del", &self.name]);
        if !out.success() {
            eprintln!("warning: `ip netns del {}` failed: {out:?}", self.name);
        }
    }
}

/// `ip link del <name>` when the link exists on the host.
pub fn delete_host_link(name: &str) {
    if host_link(name).is_some() {
        let out = ip(&["link", "del", name]);
        if !out.success() {
            eprintln!("warning: `ip link del {name}` failed: {out:?}");
        }
    }
}

/// The host link `name` as `ip -j addr show dev <name>` shows it, or `None`.
pub fn host_link(name: &str) -> Option<Value> {
    let out = ip(&["-j", "addr", "show", "dev", name]);
    if !out.success() {
        return None;
    }
    out.try_stdout_json()
        .ok()
        .and_then(|v| v.as_array().and_then(|a| a.first().cloned()))
}
