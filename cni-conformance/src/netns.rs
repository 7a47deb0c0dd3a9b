//! The container side: temporary network namespaces and the links in one,
//! through iproute2 (`ip netns`, `ip -n NS link`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

/// Why a namespace could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Not root: `ip netns add` would fail with a less helpful message.
    #[error("--netns auto creates network namespaces and needs root (effective uid is {0}); run as root or give --netns PATH")]
    NotRoot(u32),
    /// `ip` could not be run.
    #[error("cannot run `ip {args}` (is iproute2 installed?)")]
    Spawn {
        /// The arguments.
        args: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `ip` failed.
    #[error("`ip {args}` failed: {stderr}")]
    Failed {
        /// The arguments.
        args: String,
        /// What it said.
        stderr: String,
    },
}

/// Runs `ip ARGS...`, returning its stdout.
fn ip(args: &[&str]) -> Result<Vec<u8>, NetnsError> {
    let joined = args.join(" ");
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| NetnsError::Spawn {
            args: joined.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(NetnsError::Failed {
            args: joined,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(out.stdout)
}

/// A network namespace `cnic-<pid>-<n>` made with `ip netns add`, deleted
/// when dropped (also on panic).
///
/// Go: `testutils.NewNS`.
#[derive(Debug)]
pub struct TempNetns {
    name: String,
    deleted: bool,
}

impl TempNetns {
    /// Creates a fresh namespace.
    pub fn create() -> Result<TempNetns, NetnsError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let euid = nix::unistd::geteuid().as_raw();
        if euid != 0 {
            return Err(NetnsError::NotRoot(euid));
        }
        let name = format!(
            "cnic-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ip(&["netns", "add", &name])?;
        Ok(TempNetns {
            name,
            deleted: false,
        })
    }

    /// Its path, as `CNI_NETNS`.
    pub fn path(&self) -> PathBuf {
        Path::new("/var/run/netns").join(&self.name)
    }

    /// Its name, as `ip -n` takes it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Deletes it now (a "namespace already gone" scenario).
    pub fn delete(&mut self) -> Result<(), NetnsError> {
        self.deleted = true;
        ip(&["netns", "del", &self.name]).map(drop)
    }
}

impl Drop for TempNetns {
    fn drop(&mut self) {
        if !self.deleted {
            let _ = ip(&["netns", "del", &self.name]);
        }
    }
}

/// The name `ip -n` knows a namespace path by: its file name when it lives
/// in `/var/run/netns` or `/run/netns`.
pub fn ip_name(path: &Path) -> Option<String> {
    let dir = path.parent()?;
    let named = dir == Path::new("/var/run/netns") || dir == Path::new("/run/netns");
    named.then(|| path.file_name()?.to_str().map(str::to_owned))?
}

/// The names of the links in the namespace `name`, sorted.
pub fn links(name: &str) -> Result<Vec<String>, NetnsError> {
    let out = ip(&["-n", name, "-j", "link", "show"])?;
    let value: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
    let mut names: Vec<String> = value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["ifname"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

/// Creates the link `ifname` in the namespace `name` (one end of a veth
/// pair whose other end, `p<ifname>`, stays beside it), for chained plugins
/// that adjust an interface an earlier plugin made.
pub fn add_link(name: &str, ifname: &str) -> Result<(), NetnsError> {
    let peer = format!("p{ifname}");
    let peer = &peer[..peer.len().min(15)];
    ip(&[
        "-n", name, "link", "add", ifname, "type", "veth", "peer", "name", peer,
    ])?;
    ip(&["-n", name, "link", "set", ifname, "up"]).map(drop)
}

/// Deletes the link `ifname` in the namespace `name`, if it is there.
pub fn delete_link(name: &str, ifname: &str) {
    let _ = ip(&["-n", name, "link", "del", ifname]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_namespaces_have_an_ip_name() {
        assert_eq!(ip_name(Path::new("/var/run/netns/x")).as_deref(), Some("x"));
        assert_eq!(ip_name(Path::new("/run/netns/y")).as_deref(), Some("y"));
        assert_eq!(ip_name(Path::new("/proc/1/ns/net")), None);
    }
}
