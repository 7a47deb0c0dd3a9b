//! `bridge`: connects a container to a host bridge with a veth pair, a
//! drop-in replacement for the reference `bridge` plugin.
//!
//! ADD creates the bridge when it is missing (`bridge`, default `cni0`,
//! with `mtu` and `promiscMode`), a veth pair whose container end is
//! `CNI_IFNAME` in `CNI_NETNS` (MTU `mtu`, the MAC [`requested_mac`] finds)
//! and whose host end is a port of the bridge (`hairpinMode`), runs the
//! `ipam.type` plugin, configures the container end with its addresses and
//! routes, and with `isGateway` puts each subnet's gateway on the bridge
//! (`forceAddress` replaces another IPv4 address there) and enables
//! forwarding; `isDefaultGateway` adds a default route through it. The
//! result is the reference's: bridge, host end, container end, `ips` on
//! interface 2 with their gateway. Without `ipam` the port is plain layer 2.
//!
//! DEL deletes the container end and releases the IPAM reservation; a
//! namespace or link already gone is success. CHECK compares the bridge,
//! the port and the container end with `prevResult`. GC and STATUS go to
//! IPAM. A reference field this plugin does not implement (`ipMasq`,
//! `vlan`, `macspoofchk`, ...) is code 2 naming it, never ignored.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "pods", "type": "bridge", "bridge": "cni0",
//!  "isGateway": true, "ipam": {"type": "ipam-file",
//!  "ranges": [[{"subnet": "10.22.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}}
//! ```
//!
//! Where we deliberately differ: the host end's name is stable
//! ([`cni_net::host_veth_name`]) rather than random, so DEL and CHECK find
//! it without a result; configuration errors are code 7 before anything
//! changes on the host.

use std::net::IpAddr;
use std::time::Duration;

use cni_net::{Dad, Link, Netlink, Netns, VethPair};
use cni_skel::{BoxError, Plugin, Reply, Request};
use cni_types::conventions::{requested_mac, MacPrecedence};
use cni_types::{Code, Error, Extra, Interface, IpNetwork, NetConf, Result100, Route, SpecVersion};
use serde::Deserialize;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI bridge sample plugin v0.1.0";

/// The reference's default bridge name.
pub const DEFAULT_BRIDGE: &str = "cni0";

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// The bridge's name.
    #[serde(default)]
    pub bridge: Option<String>,
    /// Put the gateway address on the bridge.
    #[serde(rename = "isGateway", default)]
    pub is_gateway: bool,
    /// Route the container's default traffic through the bridge (implies
    /// `isGateway`).
    #[serde(rename = "isDefaultGateway", default)]
    pub is_default_gateway: bool,
    /// Replace another IPv4 address on the bridge instead of failing.
    #[serde(rename = "forceAddress", default)]
    pub force_address: bool,
    /// MTU of the bridge and both ends of the pair.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Let traffic leave a port and come back on it.
    #[serde(rename = "hairpinMode", default)]
    pub hairpin_mode: bool,
    /// Promiscuous mode on the bridge.
    #[serde(rename = "promiscMode", default)]
    pub promisc_mode: bool,
    /// IPv6 duplicate address detection in the container (off otherwise).
    #[serde(rename = "enabledad", default)]
    pub enable_dad: bool,
    /// Everything else, checked against what this plugin implements.
    #[serde(flatten)]
    pub other: Extra,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Bridge;

type Req<'a> = Request<'a, NetConf<Fields>>;

/// Reference fields this plugin does not implement: code 2 naming the
/// field when one asks for something (`ipMasq: false` asks for nothing).
fn unimplemented(fields: &Extra) -> Result<(), Error> {
    use serde_json::Value;
    for key in ["ipMasq", "vlan", "vlanTrunk", "macspoofchk"] {
        let asks = match fields.get(key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::Number(n)) => n.as_u64() != Some(0),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(_) => true,
        };
        if asks {
            return Err(Error::new(
                Code::UNSUPPORTED_FIELD,
                format!("bridge: {key} is not implemented"),
            )
            .with_details(format!("{key}: {}", fields[key])));
        }
    }
    Ok(())
}

/// The validated configuration.
struct Plan {
    bridge: String,
    ipam: Option<String>,
    gateway: bool,
}

fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    unimplemented(&f.other)?;
    let bridge = f.bridge.clone().filter(|b| !b.is_empty());
    let bridge = bridge.unwrap_or_else(|| DEFAULT_BRIDGE.to_owned());
    cni_net::validate_ifname(&bridge).map_err(|e| {
        Error::new(Code::INVALID_NETWORK_CONFIG, "invalid bridge").with_details(e.to_string())
    })?;
    if let Some(mtu) = f.mtu.filter(|m| !(68..=65535).contains(m)) {
        return Err(Error::new(Code::INVALID_NETWORK_CONFIG, "invalid mtu")
            .with_details(format!("{mtu}: must be between 68 and 65535")));
    }
    if f.hairpin_mode && f.promisc_mode {
        return Err(Error::new(
            Code::INVALID_NETWORK_CONFIG,
            "cannot set hairpin mode and promiscuous mode at the same time",
        ));
    }
    let ipam = req.config.ipam.as_ref().map(|i| i.ipam_type.clone());
    Ok(Plan {
        bridge,
        ipam: ipam.filter(|t| !t.is_empty()),
        gateway: f.is_gateway || f.is_default_gateway,
    })
}

fn open_netns(req: &Req) -> Result<Netns, Error> {
    let path = req
        .netns
        .as_ref()
        .ok_or_else(|| Error::new(Code::INVALID_ENVIRONMENT_VARIABLES, "CNI_NETNS is required"))?;
    Ok(Netns::open(path)?)
}

fn host_netlink() -> Result<Netlink, Error> {
    Netlink::open().map_err(|e| {
        Error::new(Code::INTERNAL, "failed to open netlink").with_details(e.to_string())
    })
}

impl Plugin for Bridge {
    type Config = NetConf<Fields>;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let plan = plan(req)?;
        let mac = requested_mac(&req.config, &req.args, None, MacPrecedence::Interface)?;
        let netns = open_netns(req)?;
        let f = &req.config.plugin;
        let mut host = host_netlink()?;
        let bridge = ensure_bridge(&mut host, &plan.bridge, f.mtu, f.promisc_mode)?;
        let mut inside = netns.socket()?;
        if inside.link_by_name(&req.ifname)?.is_some() {
            return Err(Error::new(
                Code::INTERNAL,
                format!(
                    "container veth name provided ({}) already exists",
                    req.ifname
                ),
            )
            .into());
        }
        let host_name = cni_net::host_veth_name(&req.container_id, &req.ifname);
        let port = host.add_veth(&VethPair {
            name: &host_name,
            peer_name: &req.ifname,
            peer_netns: Some(&netns),
            mtu: f.mtu,
            peer_mac: mac.map(|m| cni_net::Mac(m.mac.0)),
        })?;
        let attached =
            attach(&mut host, &port, &bridge, f.hairpin_mode).and_then(|()| match &plan.ipam {
                Some(ipam) => cni_invoke::add_with_cleanup(ipam, req, |ipam_result| {
                    let mut result = ipam_result.to_current()?;
                    layer3(
                        req,
                        &plan,
                        &netns,
                        &mut host,
                        &mut inside,
                        &bridge,
                        &mut result,
                    )?;
                    Ok(result)
                }),
                None => {
                    let eth = inside.link(&req.ifname)?;
                    inside.set_up(eth.index)?;
                    Ok(Result100::new(SpecVersion::V1_0_0))
                }
            });
        let mut result = match attached {
            Ok(result) => result,
            Err(err) => {
                let _ = host.delete_link_if_present(&host_name);
                return Err(err);
            }
        };
        let port = host.wait_until_up(port.index, Duration::from_millis(2550))?;
        // The bridge's MAC may change as the first port joins.
        let bridge = host.link(&plan.bridge)?;
        let container = inside.link(&req.ifname)?;
        let mac_of = |l: &Link| l.mac.map(|m| m.to_string()).unwrap_or_default();
        result.cni_version = SpecVersion::V1_0_0;
        result.interfaces = vec![
            Interface {
                mac: mac_of(&bridge),
                ..Interface::named(bridge.name.clone())
            },
            Interface {
                mac: mac_of(&port),
                ..Interface::named(port.name.clone())
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
        Ok(result.into())
    }

    fn del(&self, req: &Req) -> Result<Reply, BoxError> {
        let plan = plan(req)?;
        if let Some(Ok(netns)) = req.netns.as_ref().map(Netns::open) {
            netns.socket()?.delete_link_if_present(&req.ifname)?;
        }
        // A namespace that is gone took the pair with it.
        if let Some(ipam) = &plan.ipam {
            cni_invoke::delegate_del(ipam, req)?;
        }
        Ok(Reply::Empty)
    }

    fn check(&self, req: &Req) -> Result<Reply, BoxError> {
        let plan = plan(req)?;
        let netns = open_netns(req)?;
        if let Some(ipam) = &plan.ipam {
            cni_invoke::delegate_check(ipam, req)?;
        }
        let prev = req
            .config
            .prev_result
            .as_ref()
            .ok_or_else(|| Error::new(Code::INVALID_NETWORK_CONFIG, "Required prevResult missing"))?
            .to_current()?;
        check(req, &plan, &netns, &prev)?;
        Ok(Reply::Empty)
    }

    fn gc(&self, req: &Req) -> Result<Reply, BoxError> {
        if let Some(ipam) = plan(req)?.ipam {
            cni_invoke::delegate_gc(&ipam, req)?;
        }
        Ok(Reply::Empty)
    }

    fn status(&self, req: &Req) -> Result<Reply, BoxError> {
        if let Some(ipam) = plan(req)?.ipam {
            cni_invoke::delegate_status(&ipam, req)?;
        }
        Ok(Reply::Empty)
    }
}

/// The bridge, created when missing, promiscuous when asked, up.
///
/// Go: `ensureBridge`.
fn ensure_bridge(
    host: &mut Netlink,
    name: &str,
    mtu: Option<u32>,
    promisc: bool,
) -> Result<Link, Error> {
    let bridge = host.ensure_bridge(name, mtu)?;
    if promisc {
        host.set_promisc(bridge.index, true)?;
    }
    // The reference owns the bridge's routes: no router advertisements.
    if let Ok(here) = Netns::current() {
        let _ = here.set_sysctl(
            &format!("net.ipv6.conf.{}.accept_ra", name.replace('.', "/")),
            "0",
        );
    }
    host.set_up(bridge.index)?;
    Ok(host.link(name)?)
}

/// Makes the host end a port of the bridge, with hairpin mode, and up.
fn attach(host: &mut Netlink, port: &Link, bridge: &Link, hairpin: bool) -> Result<(), BoxError> {
    host.set_master(port.index, Some(bridge.index))?;
    host.set_hairpin(port.index, hairpin)?;
    host.set_up(port.index)?;
    Ok(())
}

/// Addresses and routes in the container; the gateways on the bridge.
fn layer3(
    req: &Req,
    plan: &Plan,
    netns: &Netns,
    host: &mut Netlink,
    inside: &mut Netlink,
    bridge: &Link,
    result: &mut Result100,
) -> Result<(), BoxError> {
    if result.ips.is_empty() {
        return Err(Error::new(Code::INTERNAL, "IPAM plugin returned missing IP config").into());
    }
    let f = &req.config.plugin;
    let mut gateways: Vec<IpNetwork> = Vec::new();
    for family_v4 in [true, false] {
        let mut default_found = false;
        for ip in result
            .ips
            .iter_mut()
            .filter(|ip| ip.address.is_ipv4() == family_v4)
        {
            ip.interface = Some(2);
            if ip.gateway.is_none() && plan.gateway {
                ip.gateway = Some(first_host(ip.address));
            }
            if f.is_default_gateway && !default_found {
                let any = IpNetwork::new(unspecified(family_v4), 0).expect("prefix 0 fits");
                default_found = result_has_default(&result.routes, any);
                if !default_found {
                    result.routes.push(Route::new(any, ip.gateway));
                    default_found = true;
                }
            }
            if let Some(gw) = ip.gateway.filter(|_| plan.gateway) {
                gateways.extend(IpNetwork::new(gw, ip.address.prefix()));
            }
        }
    }
    // The interface list configure_iface reads: the container end at 2.
    let mut view = result.clone();
    view.interfaces = vec![
        Interface::named(""),
        Interface::named(""),
        Interface::named(req.ifname.clone()),
    ];
    let ifname = req.ifname.replace('.', "/");
    // Best effort, as the reference: IPv6 may be off in the namespace.
    if f.enable_dad {
        let _ = netns.set_sysctl(&format!("net.ipv6.conf.{ifname}.enhanced_dad"), "1");
        let _ = netns.set_sysctl(&format!("net.ipv6.conf.{ifname}.accept_dad"), "1");
    } else {
        let _ = netns.set_sysctl(&format!("net.ipv6.conf.{ifname}.accept_dad"), "0");
    }
    let _ = netns.set_sysctl(&format!("net.ipv4.conf.{ifname}.arp_notify"), "1");
    let dad = if f.enable_dad { Dad::Run } else { Dad::Skip };
    cni_net::configure_iface(inside, &req.ifname, &view, dad)?;
    if plan.gateway {
        for gw in &gateways {
            ensure_address(host, bridge, *gw, f.force_address)?;
        }
        // Pin the bridge's MAC, or it follows the lowest port's.
        let current = host.link(&bridge.name)?;
        if let Some(mac) = current.mac {
            host.set_mac(current.index, mac)?;
        }
        Netns::current()?.enable_forwarding(&result.ips)?;
    }
    Ok(())
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

/// Puts `gw` on the bridge: present is fine; another IPv4 address, or an
/// overlapping IPv6 one, is replaced with `force`, else an error.
///
/// Go: `ensureAddr`.
fn ensure_address(
    host: &mut Netlink,
    bridge: &Link,
    gw: IpNetwork,
    force: bool,
) -> Result<(), BoxError> {
    for live in host.addresses(Some(bridge.index))? {
        let a = live.network;
        if a.is_ipv4() != gw.is_ipv4() {
            continue;
        }
        if a == gw {
            return Ok(());
        }
        if gw.is_ipv4() || a.contains(gw.addr()) || gw.contains(a.addr()) {
            if !force {
                return Err(Error::new(
                    Code::INTERNAL,
                    format!(
                        "{:?} already has an IP address different from {gw}",
                        bridge.name
                    ),
                )
                .into());
            }
            host.delete_address(bridge.index, a)?;
        }
    }
    match host.add_address(bridge.index, gw, Dad::Skip) {
        Err(e) if e.errno() == Some(nix::errno::Errno::EEXIST as i32) => Ok(()),
        other => Ok(other?),
    }
}

/// CHECK: the bridge, the port and the container end as `prev` says.
///
/// Go: bridge `cmdCheck`.
fn check(req: &Req, plan: &Plan, netns: &Netns, prev: &Result100) -> Result<(), Error> {
    let differs = |what: String| Error::new(Code::INTERNAL, what);
    let sandbox = netns.path().display().to_string();
    let mut host = host_netlink()?;
    let named = |name: &str| {
        prev.interfaces
            .iter()
            .find(|i| i.name == name && i.sandbox.is_empty())
    };
    let expected = named(&plan.bridge).ok_or_else(|| {
        differs(format!(
            "CNI created bridge {} in host namespace was not found",
            plan.bridge
        ))
    })?;
    let bridge = host
        .link_by_name(&plan.bridge)?
        .filter(|l| l.kind.as_deref() == Some("bridge"))
        .ok_or_else(|| {
            differs(format!(
                "Interface {} does not have link type of bridge",
                plan.bridge
            ))
        })?;
    same_mac(&expected.mac, &bridge)?;
    if bridge.promisc != req.config.plugin.promisc_mode {
        return Err(differs(format!(
            "Bridge interface {} configured Promisc Mode {} doesn't match current state: {}",
            bridge.name, req.config.plugin.promisc_mode, bridge.promisc
        )));
    }
    let port = prev
        .interfaces
        .iter()
        .filter(|i| i.sandbox.is_empty() && i.name != plan.bridge)
        .find_map(|i| match host.link_by_name(&i.name) {
            Ok(Some(l)) if l.master == Some(bridge.index) => Some((i, l)),
            _ => None,
        })
        .ok_or_else(|| {
            differs(format!(
                "CNI veth created for bridge {} was not found",
                plan.bridge
            ))
        })?;
    same_mac(&port.0.mac, &port.1)?;
    cni_net::check_interface(&mut netns.socket()?, prev, &req.ifname, &sandbox)
        .map_err(|e| e.with_code(Code::INTERNAL))?;
    Ok(())
}

fn same_mac(expected: &str, link: &Link) -> Result<(), Error> {
    let live = link.mac.map(|m| m.to_string()).unwrap_or_default();
    if !expected.is_empty() && !expected.eq_ignore_ascii_case(&live) {
        return Err(Error::new(
            Code::INTERNAL,
            format!(
                "Interface {} Mac doesn't match: {expected} not found",
                link.name
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use cni_skel::TestRequest;
    use cni_version::PluginInfo;

    use super::*;

    fn add(conf: serde_json::Value) -> Error {
        TestRequest::new("ADD")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/run/netns/cni-rs-bridge-does-not-exist")
            .env("CNI_IFNAME", "eth0")
            .stdin(conf.to_string())
            .run(&Bridge, &PluginInfo::all())
            .error()
            .expect("an error")
    }

    #[test]
    fn a_field_it_does_not_implement_is_code_2_naming_it() {
        for (key, value) in [
            ("ipMasq", serde_json::json!(true)),
            ("vlan", serde_json::json!(100)),
            ("macspoofchk", serde_json::json!(true)),
        ] {
            let mut conf =
                serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge"});
            conf[key] = value;
            let err = add(conf);
            assert_eq!(err.code, Code::UNSUPPORTED_FIELD, "{err:?}");
            assert!(err.msg.contains(key), "{err:?}");
        }
    }

    #[test]
    fn bad_configurations_are_code_7_before_anything_changes() {
        for (conf, msg) in [
            (
                serde_json::json!({"hairpinMode": true, "promiscMode": true}),
                "hairpin",
            ),
            (
                serde_json::json!({"bridge": "a-bridge-name-too-long"}),
                "invalid bridge",
            ),
            (serde_json::json!({"mtu": 20}), "invalid mtu"),
        ] {
            let mut full =
                serde_json::json!({"cniVersion": "1.0.0", "name": "n", "type": "bridge"});
            full.as_object_mut()
                .unwrap()
                .extend(conf.as_object().unwrap().clone());
            let err = add(full);
            assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG, "{err:?}");
            assert!(err.msg.contains(msg), "{err:?}");
        }
    }
}
