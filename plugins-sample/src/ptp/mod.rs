//! `ptp`: a point-to-point veth pair between the host and the container,
//! routed rather than bridged, a drop-in replacement for the reference
//! `ptp` plugin.
//!
//! ADD runs the `ipam.type` plugin, enables forwarding for its families,
//! creates the pair (container end `CNI_IFNAME` in `CNI_NETNS`, MTU `mtu`)
//! and configures the container end with its addresses; the subnet's
//! on-link route is replaced by a route to the gateway alone
//! (`GW/32 dev IFNAME scope link src ADDRESS`) and one to the subnet
//! through it (`SUBNET via GW src ADDRESS`), and IPAM's routes (the
//! default route) go through the gateway: everything leaves by the host
//! end. There each gateway is a `/32` (`/128`) address and each container
//! address has a host route. `ipMasq` masquerades the container's traffic
//! to outside its subnets ([`cni_netfilter::masquerade`], `ipMasqBackend`
//! or the reference's default backend). `dns` replaces IPAM's when set.
//! The result: host end, container end, `ips` on interface 1 with their
//! gateway, IPAM's routes.
//!
//! DEL deletes the container end (the pair goes with it), releases the
//! IPAM reservation and removes the masquerading; a namespace or link
//! already gone is success. CHECK compares the container end with
//! `prevResult` (a veth, its MAC, addresses and routes) and, with
//! `ipMasq`, the masquerading rules. GC and STATUS go to IPAM; GC also
//! removes the masquerading of attachments `cni.dev/valid-attachments`
//! does not list.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "kindnet", "type": "ptp", "ipMasq": false,
//!  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]],
//!           "routes": [{"dst": "0.0.0.0/0"}]}, "mtu": 1500}
//! ```
//!
//! Where we deliberately differ: the host end's name is derived
//! ([`cni_net::host_veth_names`]) rather than random. Configuration
//! errors (`mtu`, `ipMasqBackend`, no `ipam.type`) are code 7 before
//! anything changes. A failed ADD removes the pair and the masquerading
//! at once. DEL releases the reservation and removes the masquerading
//! even when the namespace is gone (the reference returns early, leaving
//! the rules) and reports IPAM's error only after cleaning up. CHECK
//! verifies the masquerading rules; GC exists (the reference's is a
//! FIXME). An address IPAM returns without a gateway is an error (the
//! reference would route through a zero address).
//!
//! Go: containernetworking/plugins `plugins/main/ptp`.

use cni_net::{ContainerVeth, LinkKind, Netlink, Netns};
use cni_netfilter::masquerade;
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Code, Error, Interface, NetConf, Result100, SpecVersion};

use crate::ipmasq::{addresses, attachment};
use crate::pair::add_container_pair;

mod config;
mod setup;

pub use self::config::Fields;
use self::config::{ipam_type, plan, Plan};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI ptp sample plugin v0.1.0";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ptp;

type Req<'a> = Request<'a, NetConf<Fields>>;

impl Plugin for Ptp {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let plan = plan(req)?;
        let netns = Netns::of(req)?;
        let mut host = Netlink::open()?;
        let mut inside = netns.socket()?;
        let veth = ContainerVeth {
            container_id: &req.container_id,
            ifname: &req.ifname,
            netns: &netns,
            mtu: plan.mtu,
            mac: None,
        };
        // The pair needs nothing from IPAM: it is made while the IPAM
        // plugin runs (a process of about a millisecond). Whichever fails
        // undoes the other: the pair is deleted, or the IPAM DEL runs. A
        // repeated ADD finds both refused (the name is taken, host-local
        // holds the attachment: code 104), so nothing live is undone.
        let (made, reserved) = std::thread::scope(|scope| {
            let making = scope.spawn(|| -> Result<_, Error> {
                let host_end = add_container_pair(&mut host, &mut inside, &veth)?;
                host.set_up(host_end.index)?;
                Ok(host_end)
            });
            let reserved = cni_invoke::delegate_add(&plan.ipam, req);
            let made = making
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (made, reserved)
        });
        let (host_end, ipam_result) = match (made, reserved) {
            (Ok(host_end), Ok(ipam_result)) => (host_end, ipam_result),
            (Ok(host_end), Err(e)) => {
                let _ = host.delete_link_if_present(host_end.index);
                return Err(e.into());
            }
            (Err(e), Ok(_)) => {
                cni_invoke::release_after_failed_add(&plan.ipam, req);
                return Err(e.into());
            }
            // The IPAM's error says more (a repeated ADD: the name taken
            // and the attachment held).
            (Err(_), Err(e)) => return Err(e.into()),
        };
        let done = (|| -> Result<Result100, BoxError> {
            let mut result = ipam_result.to_current()?;
            if result.ips.is_empty() {
                let msg = "IPAM plugin returned missing IP config";
                return Err(Error::new(Code::INTERNAL, msg).into());
            }
            Netns::current()?.enable_forwarding(&result.ips)?;
            let attached = attach(
                req,
                &plan,
                &netns,
                &mut host,
                &mut inside,
                &host_end,
                &mut result,
            );
            if attached.is_err() && plan.masquerade.is_some() {
                let _ = masquerade::teardown(&addresses(&result), &attachment(req));
            }
            attached.map(|()| result)
        })();
        let result = match done {
            Ok(result) => result,
            Err(e) => {
                let _ = host.delete_link_if_present(host_end.index);
                cni_invoke::release_after_failed_add(&plan.ipam, req);
                return Err(e);
            }
        };
        Ok(result.into())
    }

    /// DEL needs only the namespace, `ipam.type` and `ipMasq`: a
    /// configuration ADD would refuse still lets the runtime clean up.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        // A namespace that is gone took the pair with it. The kernel takes
        // tens of milliseconds to delete a link; the IPAM DEL runs
        // meanwhile instead of after it (as `veth` does), since the
        // reservation goes whatever became of the pair.
        let netns = Netns::of_for_del(req);
        let ifname = req.ifname.as_str();
        let (removed, released) = std::thread::scope(|scope| {
            let removing = scope.spawn(move || -> Result<Vec<_>, Error> {
                match netns? {
                    Some(netns) => Ok(netns.socket()?.delete_link_returning_addresses(ifname)?),
                    None => Ok(Vec::new()),
                }
            });
            let released = match ipam_type(req) {
                Some(ipam) => cni_invoke::delegate_del(&ipam, req),
                None => Ok(()),
            };
            let removed = removing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (removed, released)
        });
        if req.config.plugin.ip_masq {
            let addresses = removed.as_deref().unwrap_or_default();
            masquerade::teardown(addresses, &attachment(req)).map_err(Error::from)?;
        }
        released?;
        removed?;
        Ok(())
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let plan = plan(req)?;
        let netns = Netns::of(req)?;
        cni_invoke::delegate_check(&plan.ipam, req)?;
        let prev = req
            .config
            .prev_result
            .as_ref()
            .ok_or_else(|| {
                Error::new(
                    Code::INVALID_NETWORK_CONFIG,
                    "ptp: Required prevResult missing",
                )
            })?
            .to_current()?;
        let sandbox = netns.path().display().to_string();
        let mut inside = netns.socket()?;
        let link = cni_net::check_interface(&mut inside, &prev, &req.ifname, &sandbox)
            .map_err(|e| e.with_code(Code::INTERNAL))?;
        if link.kind != Some(LinkKind::Veth) {
            let msg = format!(
                "Error: Container interface {} not of type veth/p2p",
                link.name
            );
            return Err(Error::new(Code::INTERNAL, msg).into());
        }
        if let Some(backend) = plan.masquerade {
            masquerade::check(backend, &addresses(&prev), &attachment(req)).map_err(Error::from)?;
        }
        Ok(())
    }

    fn gc(&self, req: &Req) -> Result<(), BoxError> {
        let plan = plan(req)?;
        cni_invoke::delegate_gc(&plan.ipam, req)?;
        if plan.masquerade.is_some() {
            let valid = req.valid_attachments()?;
            masquerade::gc(&req.config.name, &valid).map_err(Error::from)?;
        }
        Ok(())
    }

    fn status(&self, req: &Req) -> Result<(), BoxError> {
        let plan = plan(req)?;
        cni_invoke::delegate_status(&plan.ipam, req)?;
        Ok(())
    }
}

/// Everything after the pair exists: addresses and routes on both ends,
/// masquerading, and the result's interfaces and DNS.
fn attach(
    req: &Req,
    plan: &Plan,
    netns: &Netns,
    host: &mut Netlink,
    inside: &mut Netlink,
    host_end: &cni_net::Link,
    result: &mut Result100,
) -> Result<(), BoxError> {
    setup::configure_container(req, inside, result)?;
    setup::configure_host(host, host_end, result)?;
    if let Some(backend) = plan.masquerade {
        masquerade::setup(backend, &addresses(result), &attachment(req)).map_err(Error::from)?;
    }
    let container = inside.link(&req.ifname)?;
    let mac_of = |l: &cni_net::Link| l.mac.map(|m| m.to_string()).unwrap_or_default();
    result.cni_version = SpecVersion::V1_0_0;
    result.interfaces = vec![
        Interface {
            mac: mac_of(host_end),
            ..Interface::named(host_end.name.clone())
        },
        Interface {
            mac: mac_of(&container),
            sandbox: netns.path().display().to_string(),
            ..Interface::named(container.name.clone())
        },
    ];
    if let Some(dns) = req.config.dns.clone().filter(|d| !d.is_empty()) {
        result.dns = dns;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
