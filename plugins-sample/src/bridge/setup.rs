//! ADD's kernel work: the bridge, its port, the container's addresses and
//! routes, the gateways on the bridge.

use std::net::IpAddr;
use std::time::Duration;

use cni_net::{sysctl_for_ifname, Dad, Link, Netlink, Netns, PortSettings};
use cni_netfilter::macspoof;
use cni_skel::{BoxError, Undo};
use cni_types::{Code, Error, Interface, IpNetwork, Result100, Route, SpecVersion};

use super::vlans::{ensure_vlan_gateway, set_port_vlans};
use super::{Plan, Req};

/// The bridge, created when missing, filtering by VLAN when the port has
/// VLANs, promiscuous when asked, up.
///
/// Go: `ensureBridge`.
pub(super) fn ensure_bridge(host: &mut Netlink, plan: &Plan, promisc: bool) -> Result<Link, Error> {
    let (name, mtu) = (plan.bridge.as_str(), plan.mtu);
    let bridge = match plan.vlans {
        Some(_) => host.ensure_vlan_bridge(name, mtu),
        None => host.ensure_bridge(name, mtu),
    }
    .map_err(|e| match e.errno() {
        Some(errno) if errno == nix::errno::Errno::EOPNOTSUPP as i32 => Error::from(e)
            .with_details(
                "vlan, vlanTrunk: this kernel has no bridge VLAN filtering \
                 (CONFIG_BRIDGE_VLAN_FILTERING)",
            ),
        _ => Error::from(e),
    })?;
    // The reference sets both every time; where they are set already
    // (every ADD but a bridge's first), the link as read stands, and two
    // requests that wait for the kernel's link lock are saved.
    let mut changed = false;
    if promisc && !bridge.promisc {
        host.set_promisc(bridge.index, true)?;
        changed = true;
    }
    // The reference owns the bridge's routes: no router advertisements.
    if let (Ok(here), Ok(key)) = (
        Netns::current(),
        sysctl_for_ifname("net.ipv6.conf.IFNAME.accept_ra", name),
    ) {
        let _ = here.set_sysctl(&key, "0");
    }
    if !bridge.up {
        host.set_up(bridge.index)?;
        changed = true;
    }
    match changed {
        true => Ok(host.link(name)?),
        false => Ok(bridge),
    }
}

/// The bridge (made when missing), the container's pair and the host end
/// made its port ([`Port::join`]): ADD's work before the addresses. Its
/// undo (the pair, by index, and the spoof check) is pushed on `undo`.
pub(super) fn make_port<'a, 'r>(
    req: &'a Req<'r>,
    plan: &'a Plan,
    netns: &'a Netns,
    mac: Option<cni_types::Mac>,
    mut host: Netlink,
    undo: &mut Undo<'a>,
) -> Result<Port<'a, 'r>, BoxError> {
    let f = &req.config.plugin;
    let bridge = ensure_bridge(&mut host, plan, f.promisc_mode)?;
    let veth = cni_net::ContainerVeth {
        container_id: &req.container_id,
        ifname: &req.ifname,
        netns,
        mtu: plan.mtu,
        mac,
        // The host end is the bridge's port from its creation.
        master: Some(bridge.index),
    };
    let port = cni_net::add_container_pair(&mut host, &veth)?;
    let index = port.index;
    undo.push(format!("deleting veth {}", port.name), move || {
        Netlink::open()?.delete_link_if_present(index)?;
        Ok(())
    });
    if f.macspoofchk {
        undo.push("removing the MAC spoof check", move || {
            Ok(macspoof::teardown(&ref_id(req))?)
        });
    }
    let mut port = Port {
        req,
        plan,
        netns,
        host,
        bridge,
        port,
        container: None,
        vlan_gateway: None,
    };
    port.join()?;
    Ok(port)
}

/// How long the host end may take to carry traffic once up (the
/// reference retries for 2.55 s).
const PORT_UP_TIMEOUT: Duration = Duration::from_millis(2550);

/// One container's port while ADD builds it: the pair exists, the rest is
/// done step by step.
pub(super) struct Port<'a, 'r> {
    pub req: &'a Req<'r>,
    pub plan: &'a Plan,
    pub netns: &'a Netns,
    pub host: Netlink,
    pub bridge: Link,
    pub port: Link,
    /// The container end as configured, once it is.
    pub container: Option<Link>,
    /// With `isGateway` and `vlan`: the link holding the gateways.
    pub vlan_gateway: Option<Link>,
}

impl Port<'_, '_> {
    /// Sets the port's hairpin mode, isolation and VLANs, and brings it
    /// up (the host end is the bridge's port from its creation); then
    /// checks the container's source MAC on it with `macspoofchk`.
    pub fn join(&mut self) -> Result<(), BoxError> {
        let f = &self.req.config.plugin;
        let port = self.port.index;
        // The reference's order (hairpin, isolation, VLANs, up), in one
        // request when there are no VLANs: each waits for the link lock.
        let vlans = self.plan.vlans.as_ref();
        let settings = PortSettings {
            hairpin: Some(f.hairpin_mode),
            isolated: f.port_isolation.then_some(true),
            up: vlans.is_none(),
        };
        self.host.set_port(port, &settings)?;
        if let Some(vlans) = vlans {
            set_port_vlans(&mut self.host, port, vlans)?;
            self.host.set_up(port)?;
        }
        if f.macspoofchk {
            let container = self.netns.socket()?.link(&self.req.ifname)?;
            let mac = container.mac.ok_or_else(|| {
                Error::new(
                    Code::INTERNAL,
                    format!("macspoofchk: {} has no MAC address", container.name),
                )
            })?;
            macspoof::setup(&self.port.name, mac, &ref_id(self.req)).map_err(Error::from)?;
        }
        Ok(())
    }

    /// Without IPAM: the container end up (unless
    /// `disableContainerInterface`), nothing more.
    pub fn layer2(&mut self) -> Result<Result100, BoxError> {
        let (ifname, up) = (
            &self.req.ifname,
            !self.req.config.plugin.disable_container_interface,
        );
        let container = self.netns.run(|inside| {
            let eth = inside.link(ifname)?;
            if !up {
                return Ok::<_, cni_net::NetError>(eth);
            }
            inside.set_up(eth.index)?;
            inside.link(eth.index)
        })?;
        self.container = Some(container);
        Ok(Result100::new(SpecVersion::V1_0_0))
    }

    /// Addresses and routes in the container; the gateways on the bridge.
    pub fn layer3(&mut self, mut result: Result100) -> Result<Result100, BoxError> {
        let (req, plan) = (self.req, self.plan);
        if result.ips.is_empty() {
            return Err(cni_net::link_plugin::missing_ip_config().into());
        }
        let f = &req.config.plugin;
        let gateways = calc_gateways(&mut result, plan.gateway, f.is_default_gateway);
        if let Some(vid) = plan.vlans.as_ref().and_then(|v| v.vlan) {
            if plan.gateway && !gateways.is_empty() {
                let preserve = f.preserve_default_vlan;
                let link = ensure_vlan_gateway(&mut self.host, &self.bridge, vid, preserve)?;
                self.vlan_gateway = Some(link);
            }
        }
        let holder = self
            .vlan_gateway
            .clone()
            .unwrap_or_else(|| self.bridge.clone());
        if plan.gateway {
            refuse_subnet_elsewhere(&mut self.host, &holder, &gateways)?;
        }
        // The interface list configure_iface reads: the container end at 2.
        let mut view = result.clone();
        view.interfaces = vec![
            Interface::named(""),
            Interface::named(""),
            Interface::named(req.ifname.clone()),
        ];
        // Best effort, as the reference: IPv6 may be off in the namespace.
        let settings: &[(&str, &str)] = if f.enable_dad {
            &[
                ("net.ipv6.conf.IFNAME.enhanced_dad", "1"),
                ("net.ipv6.conf.IFNAME.accept_dad", "1"),
                ("net.ipv4.conf.IFNAME.arp_notify", "1"),
            ]
        } else {
            &[
                ("net.ipv6.conf.IFNAME.accept_dad", "0"),
                ("net.ipv4.conf.IFNAME.arp_notify", "1"),
            ]
        };
        let named: Vec<(String, &str)> = settings
            .iter()
            .filter_map(|(key, value)| Some((sysctl_for_ifname(key, &req.ifname).ok()?, *value)))
            .collect();
        let dad = if f.enable_dad { Dad::Run } else { Dad::Skip };
        // One thread in the container for its sysctls and its addresses:
        // the sysctls are written from inside, without a thread of their
        // own.
        let netns = self.netns;
        let configured = netns.run(|inside| {
            let _ = netns.set_sysctls(&named);
            cni_net::configure_iface(inside, &req.ifname, &view, dad)
        })?;
        self.container = Some(configured);
        if plan.gateway {
            let mut added = false;
            for gw in &gateways {
                added |= ensure_address(&mut self.host, &holder, *gw, f.force_address)?;
            }
            // Pin the bridge's MAC, or it follows the lowest port's: as
            // the reference, when a gateway address was added (the
            // bridge's first ADD); a MAC set once stays set.
            if added {
                let current = self.host.link(&self.bridge.name)?;
                if let Some(mac) = current.mac {
                    self.host.set_mac(current.index, mac)?;
                }
            }
            Netns::current()?.enable_forwarding(&result.ips)?;
        }
        Ok(result)
    }

    /// Waits for the port to carry traffic, then fills in the reference's
    /// interfaces (bridge, host end, container end) and DNS.
    pub fn describe(&mut self, mut result: Result100) -> Result<Result100, BoxError> {
        // A container end left down keeps the port down: no wait then.
        let port = match self.req.config.plugin.disable_container_interface {
            true => self.host.link(self.port.index)?,
            false => self.host.wait_until_up(self.port.index, PORT_UP_TIMEOUT)?,
        };
        // The bridge's MAC may have changed as the first port joined: read
        // again, as the reference does, without the link lock.
        let mut bridge = self.bridge.clone();
        bridge.mac = cni_net::link_mac(&self.plan.bridge)?;
        // Its name and MAC, as configure_iface left them.
        let container = match self.container.take() {
            Some(link) => link,
            None => self.netns.socket()?.link(&self.req.ifname)?,
        };
        result.cni_version = SpecVersion::V1_0_0;
        result.interfaces = vec![
            bridge.interface(),
            port.interface(),
            container.interface_in(self.netns.path().display().to_string()),
        ];
        if let Some(gateway) = &self.vlan_gateway {
            let gateway = self.host.link(gateway.index)?;
            result.interfaces.push(gateway.interface());
        }
        let dns = self.req.config.dns.clone();
        if let Some(dns) = dns.filter(|d| !d.is_empty()) {
            result.dns = dns;
        }
        Ok(result)
    }
}

/// The attachment's `macspoofchk` reference ID.
pub(super) fn ref_id(req: &Req) -> String {
    macspoof::ref_id(&req.container_id, &req.ifname)
}

/// Points each address at the container end (interface 2), gives it its
/// subnet's first address as gateway when it has none and the bridge is a
/// gateway, and adds a default route per family for `isDefaultGateway`
/// unless IPAM returned one. Returns the gateways to put on the bridge.
///
/// Go: `calcGateways`.
fn calc_gateways(result: &mut Result100, gateway: bool, default_gateway: bool) -> Vec<IpNetwork> {
    let mut gateways = Vec::new();
    for family_v4 in [true, false] {
        let mut default_found = false;
        for ip in result
            .ips
            .iter_mut()
            .filter(|ip| ip.address.is_ipv4() == family_v4)
        {
            ip.interface = Some(2);
            if ip.gateway.is_none() && gateway {
                ip.gateway = Some(first_host(ip.address));
            }
            if default_gateway && !default_found {
                let any = IpNetwork::new(unspecified(family_v4), 0).expect("prefix 0 fits");
                default_found = result_has_default(&result.routes, any);
                if !default_found {
                    result.routes.push(Route::new(any, ip.gateway));
                    default_found = true;
                }
            }
            if let Some(gw) = ip.gateway.filter(|_| gateway) {
                gateways.extend(IpNetwork::new(gw, ip.address.prefix()));
            }
        }
    }
    gateways
}

fn unspecified(v4: bool) -> IpAddr {
    if v4 {
        IpAddr::from([0u8; 4])
    } else {
        IpAddr::from([0u16; 8])
    }
}

fn result_has_default(routes: &[Route], any: IpNetwork) -> bool {
    routes.iter().any(|r| r.gw.is_some() && r.dst == any)
}

/// The first address after the network's own: the reference's default
/// gateway (`calcGatewayIP`).
fn first_host(net: IpNetwork) -> IpAddr {
    match net.network() {
        IpAddr::V4(a) => std::net::Ipv4Addr::from(u32::from(a).wrapping_add(1)).into(),
        IpAddr::V6(a) => std::net::Ipv6Addr::from(u128::from(a).wrapping_add(1)).into(),
    }
}

/// Refuses a gateway whose subnet a host link other than `holder` (the
/// bridge, or a VLAN's gateway link) already holds: the
/// host's route to that subnet would leave by the other link, so the
/// containers' gateway could not answer them. Code 7, naming the link.
///
/// Go: none; the reference bridge adds the address regardless.
fn refuse_subnet_elsewhere(
    host: &mut Netlink,
    holder: &Link,
    gateways: &[IpNetwork],
) -> Result<(), Error> {
    for gw in gateways {
        // One family's addresses: a node's bridge ports each carry an
        // IPv6 link-local address that an IPv4 gateway need not read.
        let addresses = host.family_addresses(gw.family(), None)?;
        let clash = addresses.iter().find(|a| {
            let net = a.network;
            a.index != holder.index && (net.contains(gw.addr()) || gw.contains(net.addr()))
        });
        if let Some(other) = clash {
            let name = match host.find_link(other.index)? {
                Some(link) => format!("{:?}", link.name),
                None => format!("#{}", other.index),
            };
            return Err(Error::new(
                Code::INVALID_NETWORK_CONFIG,
                format!(
                    "isGateway: the subnet of gateway {gw} is already on host link {name} ({})",
                    other.network
                ),
            )
            .with_details(format!(
                "{:?} cannot be the gateway of a subnet another link routes",
                holder.name
            )));
        }
    }
    Ok(())
}

/// Puts `gw` on the bridge: present is fine; another IPv4 address, or an
/// overlapping IPv6 one, is replaced with `force`, else an error. Whether
/// this call added it.
///
/// Go: `ensureAddr`.
fn ensure_address(
    host: &mut Netlink,
    bridge: &Link,
    gw: IpNetwork,
    force: bool,
) -> Result<bool, BoxError> {
    for live in host.family_addresses(gw.family(), Some(bridge.index))? {
        let a = live.network;
        if a == gw {
            return Ok(false);
        }
        if gw.is_ipv4() || a.contains(gw.addr()) || gw.contains(a.addr()) {
            if !force {
                return Err(Error::new(
                    Code::INTERNAL,
                    format!(
                        "failed to set bridge addr: {:?} already has an IP address different from {gw}",
                        bridge.name
                    ),
                )
                .into());
            }
            host.delete_address(bridge.index, a)?;
        }
    }
    match host.add_address(bridge.index, gw, Dad::Skip) {
        // Another ADD added it meanwhile (and pins the MAC).
        Err(e) if e.is_exists() => Ok(false),
        other => Ok(other.map(|()| true)?),
    }
}

#[cfg(test)]
mod tests {
    use cni_types::IpConfig;

    use super::*;

    #[test]
    fn a_default_gateway_bridge_routes_through_the_first_address_unless_ipam_did() {
        let mut result = Result100::new(SpecVersion::V1_0_0);
        result
            .ips
            .push(IpConfig::new("10.1.2.7/24".parse().unwrap(), None));
        let default = Route::new(
            "0.0.0.0/0".parse().unwrap(),
            Some("10.1.2.1".parse().unwrap()),
        );

        let gateways = calc_gateways(&mut result, true, true);
        assert_eq!(gateways, vec!["10.1.2.1/24".parse().unwrap()]);
        assert_eq!(result.ips[0].interface, Some(2));
        assert_eq!(result.routes, vec![default.clone()]);

        // Run again, as over a result whose IPAM returned that route.
        calc_gateways(&mut result, true, true);
        assert_eq!(result.routes, vec![default], "not added twice");
    }
}
