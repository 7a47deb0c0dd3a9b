//! `host-device`: a drop-in for the reference plugin of that name, which
//! moves an existing device of the host (a NIC, an SR-IOV function, a
//! veth end, a macvlan) into the container, and back on DEL.
//!
//! The device is named by the first of `device` (its name), `hwaddr`
//! (its MAC), `kernelpath` (its `/sys/devices/...` path) or `pciBusID`
//! that is set; `runtimeConfig.deviceID` (a device plugin's PCI address
//! or auxiliary device) overrides them. ADD moves it into `CNI_NETNS`
//! renamed `CNI_IFNAME`, its original name kept as its alias (`ip link
//! set DEV alias NAME`), and sets it up; with `ipam`, the addresses and
//! routes IPAM gives go on it. DEL moves it back, renamed to its alias,
//! down, after releasing IPAM's reservation. A PCI device bound to a user-space driver (DPDK:
//! `vfio-pci`, `uio_pci_generic`, `igb_uio`) has no link: only IPAM runs.
//! CHECK compares the device in the container with `prevResult` (MAC,
//! addresses, routes) after IPAM's CHECK; STATUS is IPAM's.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "sriov", "type": "host-device", "device": "ens1f0v3",
//!  "ipam": {"type": "static", "addresses": [{"address": "10.20.0.5/24"}]}}
//! ```
//!
//! Where we deliberately differ from the reference:
//! - Bad configuration is code 7 naming the field (`invalid hwaddr`,
//!   `invalid kernelpath`, `invalid device` for a device that is not in
//!   the host namespace, such as one already in a container), checked
//!   before anything changes, as is a `CNI_IFNAME` already taken in the
//!   container; the reference answers 999, some after moving the device.
//! - IPAM runs before the device moves, and a failed ADD returns the
//!   device and releases the reservation; the reference leaves the
//!   device in the container when IPAM or the addresses fail.
//! - DEL succeeds when the device is no longer in the container (a
//!   repeated DEL) or the namespace is gone; the reference fails both.
//! - A `kernelpath` whose `net` directory lists several links
//!   (`/sys/devices/virtual`) is code 7 naming the path and the count;
//!   the reference moves whichever comes first. An all-zero `hwaddr`
//!   (what `lo` reports) is code 7.
//! - A `pciBusID`, `deviceID` or `kernelpath` that would leave its `/sys`
//!   directory (`..`, `/`) is refused.
//! - Each move is one netlink request that also renames the device and
//!   sets its alias, so a plugin killed at any instant (a runtime's
//!   deadline) leaves the device in the host under its own name or in the
//!   container as `CNI_IFNAME`, where the next DEL finds it. The
//!   reference renames in the container after moving in and before moving
//!   out: killed between the two, the device stays in the container under
//!   a name no DEL looks for, and is lost with the namespace.
//!
//! Go: containernetworking/plugins `plugins/main/host-device`.

mod config;
mod handover;

use cni_net::{link_plugin, Dad, Link, Netlink, Netns};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, Teardown, Undo};
use cni_types::{CniResult, Code, Error, Interface, NetConf, Result100, SpecVersion};

pub use self::config::Fields;
use self::config::{link_in, net_dir, plan, Selector};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI host-device plugin v0.1.0 (cni-rs)";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostDevice;

type Req<'a> = Request<'a, NetConf<Fields>>;

impl Plugin for HostDevice {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let plan = plan(req)?;
        let netns = Netns::of(req)?;
        if netns.is_same(&Netns::current()?)? {
            return Err(Error::invalid_env(
                "CNI_NETNS",
                "it is the plugin's own network namespace: the device has nowhere to go",
            )
            .into());
        }
        let mut host = Netlink::open()?;
        let device = match plan.dpdk {
            true => None,
            false => Some(find_device(&mut host, &plan.selector)?),
        };
        if device.is_some() && netns.socket()?.find_link(&req.ifname)?.is_some() {
            return Err(Error::new(
                Code::INTERNAL,
                format!(
                    "the container already has a link named {:?} (CNI_IFNAME)",
                    req.ifname
                ),
            )
            .into());
        }
        let sandbox = netns.path().display().to_string();
        Undo::scope(|undo| {
            let mut result = Result100::new(SpecVersion::V1_0_0);
            if let Some(ipam) = &plan.ipam {
                result = cni_invoke::add_ipam(ipam, req, undo)?.to_current()?;
                if result.ips.is_empty() {
                    return Err(link_plugin::missing_ip_config().into());
                }
                for ip in &mut result.ips {
                    ip.interface = Some(0);
                }
                result.cni_version = SpecVersion::V1_0_0;
                result.dns = req.config.dns.clone().unwrap_or_default();
            }
            result.interfaces = vec![interface(req, &sandbox, None)];
            printable(req, &result)?;
            let Some(device) = &device else {
                return Ok(result.into());
            };
            let moved = handover::move_in(&mut host, device, &netns, &req.ifname)?;
            undo.push(format!("moving {} back to the host", req.ifname), || {
                handover::move_out(&netns, &req.ifname)?;
                Ok(())
            });
            result.interfaces = vec![interface(req, &sandbox, Some(&moved))];
            if plan.ipam.is_some() {
                let mut inside = netns.socket()?;
                cni_net::configure_iface(&mut inside, &req.ifname, &result, Dad::Run)
                    .map_err(Error::from)?;
            }
            Ok(result.into())
        })
    }

    /// DEL needs only the namespace and `ipam.type`: the device is found
    /// by `CNI_IFNAME` in the container and returns under its alias.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        // IPAM first, as the reference: a dhcp lease is released from the
        // device, which must still be in the container.
        let mut teardown = Teardown::new();
        if let Some(ipam) = req.config.ipam_plugin() {
            teardown.keep(
                "releasing the addresses",
                cni_invoke::delegate_del(ipam, req),
            );
        }
        let dpdk = plan(req).is_ok_and(|p| p.dpdk);
        if !dpdk {
            teardown.keep("moving the device back to the host", move_out(req));
        }
        teardown.finish()
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let plan = plan(req)?;
        let netns = Netns::of(req)?;
        if let Some(ipam) = &plan.ipam {
            cni_invoke::delegate_check(ipam, req)?;
        }
        let prev = req.prev_result()?;
        if plan.dpdk {
            return Ok(());
        }
        let sandbox = netns.path().display().to_string();
        let mut inside = netns.socket()?;
        cni_net::check_interface(&mut inside, &prev, &req.ifname, &sandbox)
            .map_err(|e| e.with_code(Code::INTERNAL))?;
        Ok(())
    }

    fn status(&self, req: &Req) -> Result<(), BoxError> {
        if let Some(ipam) = req.config.ipam_plugin() {
            cni_invoke::delegate_status(ipam, req)?;
        }
        Ok(())
    }
}

/// DEL's move of `CNI_IFNAME` back to the host; a namespace or device
/// already gone is success.
fn move_out(req: &Req) -> Result<(), BoxError> {
    if let Some(netns) = Netns::of_for_del(req)? {
        handover::move_out(&netns, &req.ifname)?;
    }
    Ok(())
}

/// Refuses a result the configuration's version cannot hold (0.1.0 and
/// 0.2.0 have no interfaces, and need an address) before the device
/// moves: the answer is printed after ADD, too late to move it back.
fn printable(req: &Req, result: &Result100) -> Result<(), Error> {
    let Ok(version) = SpecVersion::parse(&req.config_version) else {
        return Ok(());
    };
    match CniResult::from(result.clone()).convert_to(&version) {
        Ok(_) => Ok(()),
        Err(e) => Err(Error::new(
            Code::INCOMPATIBLE_CNI_VERSION,
            format!("host-device has no result to give at cniVersion {version}"),
        )
        .with_details(e.to_string())),
    }
}

/// The result's one interface: `CNI_IFNAME` in the sandbox, with the
/// moved device's MAC.
fn interface(req: &Req, sandbox: &str, moved: Option<&Link>) -> Interface {
    match moved {
        Some(link) => link.interface_in(sandbox),
        None => Interface {
            sandbox: sandbox.to_owned(),
            ..Interface::named(req.ifname.clone())
        },
    }
}

/// The device the configuration names, in the plugin's own namespace;
/// code 7 naming the field when it is not there.
///
/// Go: `getLink`.
fn find_device(host: &mut Netlink, selector: &Selector) -> Result<Link, Error> {
    let missing = |field: &str, what: String| {
        Error::invalid_config(
            field,
            format!(
                "{what} not found in the host network namespace (is it in a container's already?)"
            ),
        )
    };
    match selector {
        Selector::Name(name) => host
            .find_link(name)?
            .ok_or_else(|| missing("device", format!("link {name:?}"))),
        Selector::Mac(mac) => host
            .links()?
            .into_iter()
            .find(|l| l.mac == Some(*mac))
            .ok_or_else(|| missing("hwaddr", format!("a link with MAC {mac}"))),
        other => {
            let field = match other {
                Selector::KernelPath(_) => "kernelpath",
                Selector::Pci(_) => "pciBusID",
                _ => "runtimeConfig.deviceID",
            };
            let dir = net_dir(other).unwrap_or_default();
            let only_one = matches!(other, Selector::KernelPath(_));
            let name = link_in(&dir, field, only_one)?;
            host.find_link(&name)?
                .ok_or_else(|| missing(field, format!("link {name:?}")))
        }
    }
}

#[cfg(test)]
mod tests;
