//! A `host-device` killed (SIGKILL, as a runtime does at its deadline) at
//! a random point of its ADD or of its DEL never loses the device: right
//! after the kill it is in the host under its own name or in the
//! container as `CNI_IFNAME`, and after the DEL that follows it is back
//! in the host under its own name. Needs root; the "host" is a namespace
//! of the test holding a veth end (this kernel has no `dummy`), so a
//! device the kernel destroyed takes its peer with it.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use cni_net::Netns;
use serde_json::json;
use tests::{ip, plugin_bin_dir, NetNs};

const DEVICE: &str = "hdkill0";
const IFNAME: &str = "net1";
/// Kills, half during ADDs and half during DELs: about 15 s in all.
const KILLS: u64 = 200;

/// The names of the links in `ns`, with their aliases (read over
/// netlink: a process per look would double the test's time).
fn links(ns: &NetNs) -> Vec<(String, String)> {
    let mut nl = Netns::open(ns.path())
        .and_then(|n| n.socket())
        .expect("a netlink socket in the namespace");
    let links = nl.links().expect("the namespace's links");
    links
        .into_iter()
        .map(|l| {
            let alias = nl.alias(l.index).ok().flatten().unwrap_or_default();
            (l.name, alias)
        })
        .collect()
}

/// Where the device is: `Host` under its own name, `Container` as
/// `IFNAME` with its name as alias; panics naming `what` anywhere else.
#[derive(Debug, PartialEq)]
enum Place {
    Host,
    Container,
}

fn place(host: &NetNs, container: &NetNs, what: &str) -> Place {
    let in_host = links(host);
    let in_container = links(container);
    let peer = in_host.iter().any(|(n, _)| n == &format!("{DEVICE}p"));
    assert!(
        peer,
        "{what}: the device was destroyed (its peer went with it)"
    );
    if in_host.iter().any(|(n, _)| n == DEVICE) {
        return Place::Host;
    }
    let ours = in_container.iter().any(|(n, a)| n == IFNAME && a == DEVICE);
    assert!(
        ours,
        "{what}: the device is lost: host {in_host:?}, container {in_container:?}"
    );
    Place::Container
}

/// The plugin running `command` in `host`, its configuration sent.
fn start(command: &str, host: &NetNs, container: &NetNs) -> Child {
    let conf = json!({
        "cniVersion": "1.0.0", "name": "hdkill", "type": "host-device", "device": DEVICE,
        "ipam": {"type": "static", "addresses": [{"address": "198.18.77.5/24"}],
                 "routes": [{"dst": "198.19.77.0/24", "gw": "198.18.77.1"}]}
    });
    // Straight into `host` (setns before exec) rather than through `ip
    // netns exec`: a process less per run, a third of the test's time.
    let host_ns = std::fs::File::open(host.path()).expect("open the host namespace");
    let fd = host_ns.as_raw_fd();
    let mut command_line = Command::new(plugin_bin_dir().join("host-device"));
    // SAFETY: setns is async-signal-safe, and `fd` stays open in the
    // parent until spawn returns.
    #[allow(unsafe_code)]
    unsafe {
        command_line.pre_exec(move || match libc::setns(fd, libc::CLONE_NEWNET) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
    let mut child = command_line
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", "hdkill")
        .env("CNI_NETNS", container.path())
        .env("CNI_IFNAME", IFNAME)
        .env("CNI_PATH", plugin_bin_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start host-device");
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(conf.to_string().as_bytes());
    child
}

/// Runs `command` to its end; panics when it fails.
fn finish(command: &str, host: &NetNs, container: &NetNs, what: &str) {
    let out = start(command, host, container)
        .wait_with_output()
        .expect("wait for host-device");
    assert!(
        out.status.success(),
        "{what}: {command} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// xorshift64: delays that vary run to run, reproducible from the seed
/// the failure message names.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_host_device_killed_during_add_or_del_never_loses_the_device() {
    let host = NetNs::create("hdkill-host");
    let container = NetNs::create("hdkill-ctr");
    let made = ip(&[
        "-n",
        host.name(),
        "link",
        "add",
        DEVICE,
        "type",
        "veth",
        "peer",
        "name",
        &format!("{DEVICE}p"),
    ]);
    assert!(made.success(), "{made:?}");
    assert!(ip(&["-n", host.name(), "link", "set", DEVICE, "up"]).success());
    let seed = std::env::var("HOST_DEVICE_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
            now.map_or(1, |d| d.as_nanos() as u64) | 1
        });
    let mut state = seed;
    let started = Instant::now();
    let mut left_in = [0, 0];
    for kill in 0..KILLS {
        let delay = Duration::from_micros(next(&mut state) % 40_000);
        let command = if kill % 2 == 0 { "ADD" } else { "DEL" };
        let what = format!("kill {kill} during {command} after {delay:?} (seed {seed})");
        if command == "DEL" {
            finish("ADD", &host, &container, &what);
        }
        let mut child = start(command, &host, &container);
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        match place(&host, &container, &what) {
            Place::Host => left_in[0] += 1,
            Place::Container => left_in[1] += 1,
        }
        finish("DEL", &host, &container, &what);
        let back = place(&host, &container, &format!("{what}, then DEL"));
        assert_eq!(
            back,
            Place::Host,
            "{what}: DEL left the device in the container"
        );
    }
    eprintln!(
        "{KILLS} kills in {:?} (seed {seed}): device in the host {}, in the container {} right after",
        started.elapsed(),
        left_in[0],
        left_in[1]
    );
}
