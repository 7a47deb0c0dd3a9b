//! The container side: the run's temporary network namespaces (cni-net's
//! [`TempNetns`]), and the links in a named one through iproute2 (`ip -n
//! NS link`), as a user would look at them.

use std::path::Path;
use std::process::{Command, Stdio};

use cni_net::testing::TempNetns;
use serde_json::Value;

/// Why a namespace could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Not root: creating a namespace would fail with a less helpful
    /// message.
    #[error("--netns auto creates network namespaces and needs root (effective uid is {0}); run as root or give --netns PATH")]
    NotRoot(u32),
    /// The namespace could not be created.
    #[error("cannot create a network namespace")]
    Create(#[source] cni_net::NetError),
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

/// A namespace of the run's own, `/run/netns/cni-net-cnic-PID-N`, removed
/// (with its links) when dropped, also on panic.
pub(crate) fn temporary() -> Result<TempNetns, NetnsError> {
    let euid = nix::unistd::geteuid().as_raw();
    if euid != 0 {
        return Err(NetnsError::NotRoot(euid));
    }
    TempNetns::new("cnic").map_err(NetnsError::Create)
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
