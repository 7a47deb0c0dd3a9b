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

use cni_invoke::FirstError;
use cni_net::{link_plugin, ContainerVeth, LinkKind, Netlink, Netns};
use cni_netfilter::masquerade::{self, Attachment};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, Teardown, Undo};
use cni_types::{Code, Error, NetConf, SpecVersion};

mod config;
mod setup;

use self::config::plan;
pub use self::config::Fields;

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
        Undo::scope(|undo| {
            // The pair needs nothing from IPAM: it is made while the IPAM
            // plugin runs. A repeated ADD finds both refused (the name is
            // taken, host-local holds the attachment: code 104), so
            // nothing live is undone; IPAM's error is the reference's.
            let (host_end, ipam_result) =
                cni_invoke::add_alongside(&plan.ipam, req, undo, FirstError::Ipam, |undo| {
                    let veth = ContainerVeth {
                        container_id: &req.container_id,
                        ifname: &req.ifname,
                        netns: &netns,
                        mtu: plan.mtu,
                        mac: None,
                        master: None,
                    };
                    let host_end = cni_net::add_container_pair(&mut host, &veth)?;
                    let index = host_end.index;
                    undo.push(format!("deleting veth {}", host_end.name), move || {
                        Netlink::open()?.delete_link_if_present(index)?;
                        Ok(())
                    });
                    host.set_up(index)?;
                    Ok(host_end)
                })?;
            let mut result = ipam_result.to_current()?;
            if result.ips.is_empty() {
                return Err(link_plugin::missing_ip_config().into());
            }
            Netns::current()?.enable_forwarding(&result.ips)?;
            setup::configure_container(req, &mut inside, &mut result)?;
            setup::configure_host(&mut host, &host_end, &result)?;
            if let Some(backend) = plan.masquerade {
                let addresses = result.addresses();
                // Pushed first: a setup that fails half way is undone too.
                let undone = addresses.clone();
                undo.push("removing the masquerading", move || {
                    Ok(masquerade::teardown(&undone, &Attachment::of(req))?)
                });
                masquerade::setup(backend, &addresses, &Attachment::of(req))
                    .map_err(Error::from)?;
            }
            let container = inside.link(&req.ifname)?;
            result.cni_version = SpecVersion::V1_0_0;
            result.interfaces = vec![
                host_end.interface(),
                container.interface_in(netns.path().display().to_string()),
            ];
            if let Some(dns) = req.config.dns.clone().filter(|d| !d.is_empty()) {
                result.dns = dns;
            }
            Ok(result.into())
        })
    }

    /// DEL needs only the namespace, `ipam.type` and `ipMasq`: a
    /// configuration ADD would refuse still lets the runtime clean up. A
    /// namespace that is gone took the pair with it.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let mut teardown = Teardown::new();
        let ipam = req.config.ipam_plugin();
        let removed = cni_invoke::del_alongside(ipam, req, &mut teardown, || {
            Ok(match Netns::of_for_del(req)? {
                Some(netns) => netns
                    .socket()?
                    .delete_link_returning_addresses(req.ifname.as_str())?,
                None => Vec::new(),
            })
        });
        if req.config.plugin.ip_masq {
            let addresses = removed.unwrap_or_default();
            let removing = masquerade::teardown(&addresses, &Attachment::of(req));
            teardown.keep("removing the masquerading", removing.map_err(Error::from));
        }
        teardown.finish()
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let plan = plan(req)?;
        let netns = Netns::of(req)?;
        cni_invoke::delegate_check(&plan.ipam, req)?;
        let prev = req.prev_result_or("ptp: Required prevResult missing")?;
        let sandbox = netns.path().display().to_string();
        let mut inside = netns.socket()?;
        let link = cni_net::check_interface(&mut inside, &prev, &req.ifname, &sandbox)
            .map_err(|e| e.with_code(Code::INTERNAL))?;
        if link.kind != Some(LinkKind::Veth) {
            let msg = format!(
                "Error: Container interface {} not of type veth/p2p",
                link.name
            );
            return Err(cni_net::differs(msg).into());
        }
        if let Some(backend) = plan.masquerade {
            masquerade::check(backend, &prev.addresses(), &Attachment::of(req))
                .map_err(Error::from)?;
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

#[cfg(test)]
mod tests;
