//! ADD's kernel work: the pair, the container's addresses and point-to-
//! point routes, the host end's gateway addresses and host routes.

use cni_net::{Dad, Link, Netlink};
use cni_skel::BoxError;
use cni_types::{Code, Error, Interface, IpNetwork, Result100, Route};

use super::Req;

/// The container end's addresses and routes: each address with its
/// prefix, then instead of the subnet's on-link route a route to the
/// gateway alone on the link and one to the subnet through the gateway,
/// both from the address; the result's routes (the default route) go
/// through the gateway too. So every packet leaves through the host end.
///
/// Go: ptp's `setupContainerVeth`.
pub(super) fn configure_container(
    req: &Req,
    inside: &mut Netlink,
    result: &mut Result100,
) -> Result<(), BoxError> {
    for ip in &mut result.ips {
        ip.interface = Some(1);
        if ip.gateway.is_none() {
            return Err(Error::new(
                Code::INTERNAL,
                format!(
                    "IPAM returned no gateway for {}: ptp routes through it",
                    ip.address
                ),
            )
            .into());
        }
    }
    let mut view = result.clone();
    view.interfaces = vec![Interface::named(""), Interface::named(req.ifname.clone())];
    let link = cni_net::configure_iface(inside, &req.ifname, &view, Dad::Run)?;
    for ip in &result.ips {
        let gw = ip.gateway.expect("checked above");
        let subnet = ip.address.subnet();
        inside.delete_route(link.index, &Route::new(subnet, None))?;
        let src = ip.address.addr();
        inside.add_route_from(link.index, &Route::new(IpNetwork::host(gw), None), src)?;
        inside.add_route_from(link.index, &Route::new(subnet, Some(gw)), src)?;
    }
    Ok(())
}

/// The host end's side: each gateway as a full-length address (the
/// container's next hop answers there), and a host route to each
/// container address through the pair.
///
/// Go: ptp's `setupHostVeth`.
pub(super) fn configure_host(
    host: &mut Netlink,
    host_end: &Link,
    result: &Result100,
) -> Result<(), BoxError> {
    for ip in &result.ips {
        let gw = ip.gateway.expect("configure_container checked it");
        host.add_address(host_end.index, IpNetwork::host(gw), Dad::Run)?;
        let to_container = Route {
            scope: Some(HOST_SCOPE),
            ..Route::new(IpNetwork::host(ip.address.addr()), None)
        };
        match host.add_route(host_end.index, &to_container) {
            Err(e) if e.is_exists() => {}
            other => other?,
        }
    }
    Ok(())
}

/// `RT_SCOPE_HOST`, the scope of the reference's `ip.AddHostRoute`.
const HOST_SCOPE: u32 = 254;
