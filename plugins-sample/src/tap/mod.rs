//! `tap`: the container gets a persistent tap device (a VMM such as
//! Kata's attaches to it), a drop-in replacement for the reference `tap`
//! plugin.
//!
//! ADD makes the tap inside `CNI_NETNS` with the TUN ioctls (the only
//! way the kernel makes one) under a temporary name: `multiQueue`, and
//! `owner` and `group` allowed to attach; sets `mtu` and the requested
//! MAC (`runtimeConfig.mac`, `args.cni.mac`, `CNI_ARGS` `MAC`, then
//! `mac`), renames it `CNI_IFNAME`, makes it a port of `bridge` (a bridge
//! in the container's namespace) when set, and with an `ipam` section
//! configures IPAM's addresses and routes on it (else sets it up). The
//! result: the one interface (name, MAC, sandbox), `ips` on interface 0,
//! IPAM's routes, and the configuration's `dns`.
//!
//! DEL releases the IPAM reservation and deletes `CNI_IFNAME`; a
//! namespace or link already gone is success. CHECK compares the link
//! with `prevResult` (its MAC, addresses and routes). STATUS and GC go
//! to IPAM.
//!
//! The device's flags are the reference's, which makes it one of two
//! ways: with both `owner` and `group`, through netlink's `Tuntap`
//! (`vnet_hdr`; packet information unless `multiQueue`); otherwise
//! through `ip tuntap add` (no packet information, no `vnet_hdr`).
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "vm", "type": "tap", "multiQueue": true,
//!  "owner": 107, "group": 107, "bridge": "br0"}
//! ```
//!
//! Where we deliberately differ: `selinuxContext` is refused (code 2):
//! the reference labels the `ip` command it runs, and this plugin runs
//! none. With both `owner` and `group`, `mtu` and the MAC are applied
//! too: the reference's netlink path drops them silently (vishvananda
//! netlink's `Tuntap` creation sets only the TUN ioctls). A device is
//! never attached to an existing one of the name (`IFF_TUN_EXCL`). Bad
//! input (`mtu`, `bridge` missing or not a bridge, a MAC, an `owner` or
//! `group` the plugin's user namespace does not map, such as 4294967295,
//! the kernel's "unset") is code 7 naming the field before anything
//! changes; the reference's kernel call fails after the device exists. A kernel without
//! tun/tap is an error saying so. The temporary name is derived rather
//! than random; DEL deletes the link even when IPAM's DEL fails; GC goes
//! to IPAM.
//!
//! Go: containernetworking/plugins `plugins/main/tap`.

use std::path::Path;

use cni_net::link_plugin::{self, Addressing, Expected};
use cni_net::{LinkKind, Netns, Tap as TapDevice};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, Undo};
use cni_types::conventions::{requested_mac, MacPrecedence};
use cni_types::{Code, Error, Mac, NetConf};
use serde::Deserialize;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI tap sample plugin v0.1.0";

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// Several queues, one file per vCPU.
    #[serde(rename = "multiQueue", default)]
    pub multi_queue: bool,
    /// MTU of the tap; 0 or absent: the kernel's default.
    #[serde(default)]
    pub mtu: Option<i64>,
    /// The tap's MAC, unless the runtime asks for another.
    #[serde(default)]
    pub mac: Option<String>,
    /// The user allowed to attach to the tap.
    #[serde(default)]
    pub owner: Option<u32>,
    /// The group allowed to attach to the tap.
    #[serde(default)]
    pub group: Option<u32>,
    /// An SELinux label for the device's creation (refused, see above).
    #[serde(rename = "selinuxContext", default)]
    pub selinux_context: String,
    /// A bridge in the container's namespace to make the tap a port of.
    #[serde(default)]
    pub bridge: String,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tap;

type Req<'a> = Request<'a, NetConf<Fields>>;

/// The validated configuration.
#[derive(Debug)]
struct Plan {
    mtu: Option<u32>,
    mac: Option<Mac>,
    /// The bridge's index in the container's namespace.
    bridge: Option<u32>,
}

/// Validates the configuration for ADD and opens the namespace: code 7
/// naming the field (2 for `selinuxContext`), before anything changes.
fn plan(req: &Req) -> Result<(Plan, Netns), Error> {
    let f = &req.config.plugin;
    if !f.selinux_context.is_empty() {
        return Err(Error::new(
            Code::UNSUPPORTED_FIELD,
            "selinuxContext is not supported: this plugin runs no `ip` command to label",
        ));
    }
    let ids = [
        ("owner", f.owner, "/proc/self/uid_map"),
        ("group", f.group, "/proc/self/gid_map"),
    ];
    for (field, id, map) in ids {
        if let Some(id) = id.filter(|id| !mapped(*id, Path::new(map))) {
            return Err(Error::invalid_config(
                field,
                format!(
                    "{id}: no {field} to the kernel (not mapped in {map}; 4294967295 never is)"
                ),
            ));
        }
    }
    let mtu = match f.mtu.unwrap_or(0) {
        0 => None,
        m => Some(
            u32::try_from(m)
                .ok()
                .filter(|m| cni_net::validate_mtu(*m).is_ok())
                .ok_or_else(|| {
                    Error::invalid_config("mtu", format!("{m}: must be between 68 and 65535"))
                })?,
        ),
    };
    let mac = requested_mac(
        &req.config,
        &req.args,
        f.mac.as_deref(),
        MacPrecedence::Interface,
    )?;
    let netns = Netns::of(req)?;
    let bridge = match f.bridge.as_str() {
        "" => None,
        name => {
            let link = netns
                .socket()?
                .find_link(name)
                .map_err(|e| Error::invalid_config("bridge", e))?;
            match link {
                Some(l) if l.kind == Some(LinkKind::Bridge) => Some(l.index),
                Some(_) => {
                    return Err(Error::invalid_config(
                        "bridge",
                        format!("link {name:?} in the container's namespace is not a bridge"),
                    ))
                }
                None => {
                    return Err(Error::invalid_config(
                        "bridge",
                        format!("link {name:?} not found in the container's namespace"),
                    ))
                }
            }
        }
    };
    let plan = Plan {
        mtu,
        mac: mac.map(|m| m.mac),
        bridge,
    };
    Ok((plan, netns))
}

/// Whether `id` is a user or group the kernel knows in this process's
/// user namespace: one of the ranges of `map` (`/proc/self/uid_map`,
/// whose ranges never hold 4294967295, `(uid_t)-1`). `TUNSETOWNER` and
/// `TUNSETGROUP` refuse any other with `EINVAL`, after the device
/// exists. Without a readable map, only 4294967295 is refused.
fn mapped(id: u32, map: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(map) else {
        return id != u32::MAX;
    };
    text.lines().any(|line| {
        let numbers: Vec<u64> = line
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        matches!(numbers[..], [inside, _, count] if (inside..inside + count).contains(&u64::from(id)))
    })
}

/// The device as the reference makes it (see the module's docs).
fn device<'a>(f: &Fields, name: &'a str) -> TapDevice<'a> {
    let through_netlink = f.owner.is_some() && f.group.is_some();
    TapDevice {
        name,
        multi_queue: f.multi_queue,
        vnet_hdr: through_netlink,
        packet_info: through_netlink && !f.multi_queue,
        owner: f.owner,
        group: f.group,
    }
}

impl Plugin for Tap {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let (plan, netns) = plan(req)?;
        let addressing = Addressing {
            ipam: req.config.ipam_plugin().map(str::to_owned),
            ..Addressing::default()
        };
        let temporary = cni_net::host_veth_name(&req.container_id, &req.ifname);
        let mut inside = netns.socket()?;
        Undo::scope(|undo| {
            let tap = netns.add_tap(&device(&req.config.plugin, &temporary))?;
            // By index: `CNI_IFNAME` may be a live attachment's link that
            // the rename runs into.
            link_plugin::push_delete(undo, &netns, tap.index);
            if let Some(mtu) = plan.mtu {
                inside.set_mtu(tap.index, mtu)?;
            }
            if let Some(mac) = plan.mac {
                inside.set_mac(tap.index, mac)?;
            }
            link_plugin::rename(req, &mut inside, &temporary)?;
            if let Some(bridge) = plan.bridge {
                inside.set_master(tap.index, Some(bridge))?;
            }
            link_plugin::attach(req, &addressing, &netns, &mut inside, undo)
        })
    }

    /// DEL needs only the namespace and `ipam.type`.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::del(req)
    }

    /// CHECK compares what the reference does: the interface's MAC,
    /// addresses and routes, not its kind.
    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let expected = Expected {
            kind: None,
            settings: None,
            ipam: req.config.ipam_plugin().map(str::to_owned),
            mtu: None,
            missing_prev_result: Some("Required prevResult missing"),
        };
        link_plugin::check(req, &expected)
    }

    fn gc(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::gc(req)
    }

    fn status(&self, req: &Req) -> Result<(), BoxError> {
        link_plugin::status(req)
    }
}

#[cfg(test)]
mod tests;
