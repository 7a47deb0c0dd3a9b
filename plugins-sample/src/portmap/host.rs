//! What ADD does on the host besides its rules: stale UDP flows
//! forgotten, and `route_localnet` where the host reaches a container
//! through `127.0.0.1`.

use std::net::IpAddr;

use cni_netfilter::{Family, Protocol};
use cni_types::{Code, Error, IpFamily, IpNetwork};

use super::config::Setup;
use super::Req;

/// ADD's work for a container address after its rules: stale UDP flows
/// (after the rules, so new flows take them; informative only, as in the
/// reference) and `route_localnet`.
pub(super) fn after_forward(setup: &Setup, req: &Req, container: IpNetwork) -> Result<(), Error> {
    let ip = container.family();
    if let Err(e) = delete_stale_udp(setup, ip) {
        req.log(format_args!(
            "portmap: failed to delete stale UDP conntrack entries for {}: {e}",
            container.addr()
        ));
    }
    if setup.snat && ip == IpFamily::V4 {
        enable_route_localnet(container.addr())?;
    }
    Ok(())
}

/// Removes the conntrack entries of UDP flows to the mapped host ports in
/// a family.
///
/// Go: `deletePortmapStaleConnections`.
fn delete_stale_udp(setup: &Setup, ip: IpFamily) -> Result<(), cni_netfilter::FilterError> {
    let family = Family::of(ip);
    for m in setup
        .mappings
        .iter()
        .filter(|m| m.protocol == Protocol::Udp)
    {
        cni_netfilter::conntrack::delete_by_destination_port(family, Protocol::Udp, m.host_port)?;
    }
    Ok(())
}

/// Sets `route_localnet` on the host interface that routes to the
/// container, so 127.0.0.0/8 sources may cross to it (the host reaching
/// `127.0.0.1:hostPort`). Nothing when no route leads there.
///
/// Go: `getRoutableHostIF` and `enableLocalnetRouting`.
fn enable_route_localnet(container: IpAddr) -> Result<(), Error> {
    let failed = |e: cni_net::NetError| {
        Error::new(Code::INTERNAL, "unable to enable route_localnet").with_details(e.to_string())
    };
    let Some(ifname) = routable_host_interface(container) else {
        return Ok(());
    };
    let name = cni_net::sysctl_for_ifname("net.ipv4.conf.IFNAME.route_localnet", &ifname)
        .map_err(failed)?;
    // Written from this thread, which is in the host's namespace: a
    // thread that joins it first (`Netns::set_sysctl`) cost a few
    // milliseconds of an ADD of about ten (bench/process/kind.sh).
    let path = cni_net::sysctl_path(&name).map_err(failed)?;
    std::fs::write(&path, "1").map_err(|e| {
        Error::new(Code::INTERNAL, "unable to enable route_localnet")
            .with_details(format!("{}: {e}", path.display()))
    })
}

/// The interface the host routes `ip` through (the kernel's lookup; its
/// name read without the link lock, as each pod's ADD does it).
fn routable_host_interface(ip: IpAddr) -> Option<String> {
    let mut netlink = cni_net::Netlink::open().ok()?;
    let oif = netlink.route_to(ip).ok()??;
    cni_net::link_name(oif).ok()
}
