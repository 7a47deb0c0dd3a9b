//! The kernel floor of bench/process/burst.sh: what a pod's network costs
//! the kernel alone, for N pods at once, with no plugin, no runtime and no
//! process per step. Each pod, on a thread of its own: a veth whose
//! container end is created in the pod's namespace, the host end a port of
//! the bridge and up, the container end up with an address and a default
//! route; with `RULES` > 0, one `nft -f -` batch adding a chain of that
//! many rules for the pod. Then every pod's DEL at once: the host end
//! deleted (the kernel removes the rest) and, with rules, one batch
//! removing the pod's chain.
//!
//! The links are left as the list's plugin leaves them, since what the
//! kernel does for a pod follows from them (IPv6's router solicitation
//! and MLD reports, a gratuitous ARP, each flooded to the bridge's ports,
//! at once or a second later). Words after RULES say how:
//! - `bridge-sysctls`: the container end's `accept_dad` 0 and
//!   `arp_notify` 1, written before it goes up, as the bridge plugin (the
//!   reference's and ours) writes them unless `enabledad`: its link-local
//!   address is usable at once and announced at once;
//! - `hairpin`: each port in hairpin mode (`hairpinMode`);
//! - `promisc`: the bridge promiscuous (`promiscMode`).
//!
//! Without them, the container end keeps the kernel's defaults, as ptp
//! leaves it.
//!
//! usage: burst_floor PREFIX N NET BRIDGE RULES [bridge-sysctls] [hairpin] [promisc]
//!   namespaces /run/netns/PREFIX-0 .. -N-1 (made beforehand), addresses
//!   NET.2 .. NET.(N+1) /24 with gateway NET.1 on BRIDGE (made here when
//!   missing), rules in table `ip cni_floor` (made here). Prints one JSON
//!   object as cniburst's burst does: per-pod milliseconds and makespans.

use std::io::Write;
use std::net::IpAddr;
use std::process::{Command, Stdio};
use std::time::Instant;

use cni_net::{ContainerVeth, Dad, Netlink, Netns};
use cni_types::{IpNetwork, Route};

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// Runs `script` through one `nft -f -`: one atomic batch.
fn nft(script: &str) -> Result<(), Failure> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or("nft: no stdin")?
        .write_all(script.as_bytes())?;
    match child.wait()?.success() {
        true => Ok(()),
        false => Err(format!("nft -f failed on: {script}").into()),
    }
}

struct Pod {
    id: String,
    netns: Netns,
    address: IpNetwork,
}

/// How the list's plugin leaves the links (the words after RULES).
#[derive(Default, Clone, Copy)]
struct AsThePlugin {
    bridge_sysctls: bool,
    hairpin: bool,
    promisc: bool,
}

/// The sysctls bridge writes in the container before the end goes up.
const BRIDGE_SYSCTLS: [(&str, &str); 2] = [
    ("net.ipv6.conf.eth0.accept_dad", "0"),
    ("net.ipv4.conf.eth0.arp_notify", "1"),
];

fn add(
    pod: &Pod,
    bridge: u32,
    gateway: IpAddr,
    rules: usize,
    links: AsThePlugin,
) -> Result<(), Failure> {
    let mut host = Netlink::open()?;
    let host_end = host.add_container_veth(&ContainerVeth {
        container_id: &pod.id,
        ifname: "eth0",
        netns: &pod.netns,
        mtu: None,
        mac: None,
        master: None,
    })?;
    host.set_master(host_end.index, Some(bridge))?;
    if links.hairpin {
        host.set_hairpin(host_end.index, true)?;
    }
    host.set_up(host_end.index)?;
    let default = IpNetwork::new(IpAddr::from([0, 0, 0, 0]), 0).ok_or("0.0.0.0/0")?;
    pod.netns.run(|inside| {
        if links.bridge_sysctls {
            for written in pod.netns.set_sysctls(&BRIDGE_SYSCTLS)? {
                written?;
            }
        }
        let eth0 = inside.link("eth0")?.index;
        inside.add_address(eth0, pod.address, Dad::Skip)?;
        inside.set_up(eth0)?;
        inside.add_route(eth0, &Route::new(default, Some(gateway)))
    })?;
    if rules > 0 {
        let ip = pod.address.addr();
        let mut script = format!("add chain ip cni_floor {}\n", pod.id);
        for port in 0..rules {
            script.push_str(&format!(
                "add rule ip cni_floor {} ip daddr {ip} tcp dport {} accept comment \"{}\"\n",
                pod.id,
                8000 + port,
                pod.id
            ));
        }
        nft(&script)?;
    }
    Ok(())
}

fn del(pod: &Pod, rules: usize) -> Result<(), Failure> {
    let mut host = Netlink::open()?;
    let mut inside = pod.netns.socket()?;
    let peer = inside.link("eth0")?.veth_peer().ok_or("eth0 has no peer")?;
    host.delete_link(peer)?;
    if rules > 0 {
        nft(&format!(
            "flush chain ip cni_floor {0}\ndelete chain ip cni_floor {0}\n",
            pod.id
        ))?;
    }
    Ok(())
}

/// What every pod's step took at once.
struct Burst {
    /// Per-pod milliseconds, sorted.
    times: Vec<f64>,
    /// From the first start to the last end, in milliseconds.
    makespan: f64,
    /// The pods whose step failed, and why.
    errors: Vec<String>,
}

/// Runs `step` on every pod at once.
fn all(pods: &[Pod], step: &(dyn Fn(&Pod) -> Result<(), Failure> + Sync)) -> Burst {
    let start = Instant::now();
    let outcomes: Vec<(f64, Option<String>)> = std::thread::scope(|s| {
        let threads: Vec<_> = pods
            .iter()
            .map(|pod| {
                s.spawn(move || {
                    let t = Instant::now();
                    let failed = step(pod).err().map(|e| format!("{}: {e}", pod.id));
                    (t.elapsed().as_secs_f64() * 1e3, failed)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or((f64::NAN, Some("a thread panicked".into())))
            })
            .collect()
    });
    let makespan = start.elapsed().as_secs_f64() * 1e3;
    let (mut times, errors): (Vec<f64>, Vec<Option<String>>) = outcomes.into_iter().unzip();
    times.sort_by(f64::total_cmp);
    Burst {
        times,
        makespan,
        errors: errors.into_iter().flatten().collect(),
    }
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: burst_floor PREFIX N NET BRIDGE RULES [bridge-sysctls] [hairpin] [promisc]";
    let [_, prefix, n, net, bridge, rules, words @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    let mut links = AsThePlugin::default();
    for word in words {
        match word.as_str() {
            "bridge-sysctls" => links.bridge_sysctls = true,
            "hairpin" => links.hairpin = true,
            "promisc" => links.promisc = true,
            _ => return Err(format!("{usage}: not {word:?}").into()),
        }
    }
    let (n, rules): (usize, usize) = (n.parse()?, rules.parse()?);
    let gateway: IpNetwork = format!("{net}.1/24").parse()?;
    let mut host = Netlink::open()?;
    let bridge = host.ensure_bridge(bridge, None)?;
    if host.addresses(Some(bridge.index))?.is_empty() {
        host.add_address(bridge.index, gateway, Dad::Skip)?;
    }
    if links.promisc {
        host.set_promisc(bridge.index, true)?;
    }
    host.set_up(bridge.index)?;
    if rules > 0 {
        nft("add table ip cni_floor\n")?;
    }
    let pods = (0..n)
        .map(|i| {
            Ok(Pod {
                id: format!("floor{i}"),
                netns: Netns::open(format!("/run/netns/{prefix}-{i}"))?,
                address: format!("{net}.{}/24", i + 2).parse()?,
            })
        })
        .collect::<Result<Vec<Pod>, Failure>>()?;
    let added = all(&pods, &|pod| {
        add(pod, bridge.index, gateway.addr(), rules, links)
    });
    let deleted = all(&pods, &|pod| del(pod, rules));
    if rules > 0 {
        nft("delete table ip cni_floor\n")?;
    }
    let errors: Vec<&String> = added.errors.iter().chain(&deleted.errors).collect();
    let report = serde_json::json!({
        "add": added.times,
        "del": deleted.times,
        "add_makespan": added.makespan,
        "del_makespan": deleted.makespan,
        "errors": errors,
    });
    println!("{report}");
    Ok(())
}
