//! `veth`: an interface plugin that connects a container to the host with a
//! veth pair and delegates addressing to its IPAM plugin.
//!
//! ADD creates the pair with the container end directly inside `CNI_NETNS`
//! named `CNI_IFNAME` (MTU from `mtu`), runs the `ipam.type` plugin, puts the
//! addresses and routes it returned on the container end, gives the host end
//! each subnet's gateway address (so the container reaches the host through
//! it) and a host route to each container address, and returns the full
//! result: host and container interfaces with MAC addresses, `ips` on the
//! container interface, routes, and DNS (the config's `dns`, else IPAM's).
//! When anything after the IPAM ADD fails, the pair is deleted and the IPAM
//! DEL runs before the error is returned.
//!
//! DEL runs the IPAM DEL and deletes the pair; a namespace or interface that
//! is already gone is success. CHECK verifies the previous result against
//! the namespace (interface, MAC, addresses, routes) and delegates to IPAM.
//! GC and STATUS go to IPAM.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "pods", "type": "veth", "mtu": 1450,
//!  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.22.0.0/24"}]],
//!           "routes": [{"dst": "0.0.0.0/0"}]}}
//! ```

mod netlink;

use std::fs::File;
use std::net::IpAddr;

use cni_skel::{BoxError, Plugin, Reply, Request};
use cni_types::{CniResult, Code, Error, Interface, IpNetwork, NetConf, Result100};
use serde::Deserialize;

pub use self::netlink::{Link, Netlink};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI veth sample plugin v0.1.0";

/// The container interface already exists in the namespace.
pub const INTERFACE_EXISTS: Code = Code(101);
/// CHECK found the namespace different from the previous result.
pub const NOT_AS_EXPECTED: Code = Code(102);

/// The plugin's own configuration keys.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// MTU of both ends (the kernel default when absent).
    #[serde(default)]
    pub mtu: Option<u32>,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Veth;

type Req<'a> = Request<'a, NetConf<Fields>>;

fn netlink_error(what: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::new(Code::INTERNAL, format!("failed to {what}")).with_details(e.to_string())
}

/// Validates the configuration before anything changes on the host.
fn validate(req: &Req) -> Result<String, Error> {
    if let Some(mtu) = req.config.plugin.mtu {
        if !(68..=65535).contains(&mtu) {
            return Err(Error::new(Code::INVALID_NETWORK_CONFIG, "invalid mtu")
                .with_details(format!("{mtu}: must be between 68 and 65535")));
        }
    }
    Ok(req.config.ipam_type()?.to_owned())
}

fn open_netns(req: &Req) -> Result<File, Error> {
    let path = req
        .netns
        .as_ref()
        .ok_or_else(|| Error::new(Code::INVALID_ENVIRONMENT_VARIABLES, "CNI_NETNS is required"))?;
    File::open(path).map_err(|e| {
        Error::new(
            Code::INVALID_NETNS,
            format!("failed to open netns {}", path.display()),
        )
        .with_details(e.to_string())
    })
}

/// The host end's name for an attachment: stable (a runtime or a test can
/// find it again), short enough for the kernel (15 bytes).
pub fn host_name(container_id: &str, ifname: &str) -> String {
    // FNV-1a: a stable, dependency-free hash; collisions only mean EEXIST.
    let hash = container_id
        .bytes()
        .chain([0])
        .chain(ifname.bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("veth{:08x}", hash as u32)
}

impl Plugin for Veth {
    type Config = NetConf<Fields>;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let ipam = validate(req)?;
        let netns = open_netns(req)?;
        let mut inside =
            Netlink::open_in(&netns).map_err(netlink_error("enter the container netns"))?;
        if inside
            .link_by_name(&req.ifname)
            .map_err(netlink_error("list container interfaces"))?
            .is_some()
        {
            return Err(
                Error::new(INTERFACE_EXISTS, "container interface already exists")
                    .with_details(format!(
                        "{:?} in {}",
                        req.ifname,
                        req.netns
                            .as_ref()
                            .map(|p| p.display().to_string())
                            .unwrap_or_default()
                    ))
                    .into(),
            );
        }
        let mut host = Netlink::open().map_err(netlink_error("open netlink"))?;
        let result = cni_invoke::add_with_cleanup(&ipam, req, |ipam_result| {
            let host_name = host_name(&req.container_id, &req.ifname);
            host.add_veth(
                &host_name,
                &req.ifname,
                netlink::fd_of(&netns),
                req.config.plugin.mtu,
            )
            .map_err(netlink_error("create the veth pair"))?;
            match configure(req, &ipam_result, &host_name, &mut host, &mut inside) {
                Ok(result) => Ok(result),
                Err(err) => {
                    if let Ok(Some(link)) = host.link_by_name(&host_name) {
                        let _ = host.delete_link(link.index);
                    }
                    Err(err)
                }
            }
        })?;
        Ok(result.into())
    }

    fn del(&self, req: &Req) -> Result<Reply, BoxError> {
        let ipam = validate(req)?;
        cni_invoke::delegate_del(&ipam, req)?;
        // A namespace that is gone took the pair with it.
        let Some(Ok(netns)) = req.netns.as_ref().map(File::open) else {
            return Ok(Reply::Empty);
        };
        let mut inside =
            Netlink::open_in(&netns).map_err(netlink_error("enter the container netns"))?;
        if let Some(link) = inside
            .link_by_name(&req.ifname)
            .map_err(netlink_error("list container interfaces"))?
        {
            inside
                .delete_link(link.index)
                .map_err(netlink_error("delete the veth pair"))?;
        }
        Ok(Reply::Empty)
    }

    fn check(&self, req: &Req) -> Result<Reply, BoxError> {
        let ipam = validate(req)?;
        let prev = req
            .config
            .prev_result
            .as_ref()
            .ok_or_else(|| Error::new(Code::INVALID_NETWORK_CONFIG, "CHECK needs a prevResult"))?
            .to_current()?;
        let netns = open_netns(req)?;
        let mut inside =
            Netlink::open_in(&netns).map_err(netlink_error("enter the container netns"))?;
        check_namespace(req, &prev, &mut inside)?;
        cni_invoke::delegate_check(&ipam, req)?;
        Ok(Reply::Empty)
    }

    fn gc(&self, req: &Req) -> Result<Reply, BoxError> {
        cni_invoke::delegate_gc(&validate(req)?, req)?;
        Ok(Reply::Empty)
    }

    fn status(&self, req: &Req) -> Result<Reply, BoxError> {
        cni_invoke::delegate_status(&validate(req)?, req)?;
        Ok(Reply::Empty)
    }
}

/// Everything after the pair exists: addresses, routes, links up, and the
/// result describing it.
fn configure(
    req: &Req,
    ipam_result: &CniResult,
    host_name: &str,
    host: &mut Netlink,
    inside: &mut Netlink,
) -> Result<Result100, BoxError> {
    let mut result = ipam_result.to_current()?;
    let host_link = host
        .link_by_name(host_name)?
        .ok_or_else(|| Error::new(Code::INTERNAL, "host end of the pair vanished"))?;
    let peer = inside
        .link_by_name(&req.ifname)?
        .ok_or_else(|| Error::new(Code::INTERNAL, "container end of the pair vanished"))?;
    inside
        .set_up(peer.index)
        .map_err(netlink_error("set the container interface up"))?;
    host.set_up(host_link.index)
        .map_err(netlink_error("set the host interface up"))?;
    wait_until_up(host, host_link.index, "host")?;
    wait_until_up(inside, peer.index, "container")?;

    for ip in &result.ips {
        inside
            .add_address(peer.index, ip.address)
            .map_err(netlink_error("add an address in the container"))?;
        let host_route = IpNetwork::new(
            ip.address.addr(),
            if ip.address.is_ipv4() { 32 } else { 128 },
        )
        .unwrap_or(ip.address);
        host.add_route(host_route, None, host_link.index)
            .map_err(netlink_error("add the host route to the container"))?;
        if let Some(gw) = ip.gateway {
            let own = IpNetwork::new(gw, if gw.is_ipv4() { 32 } else { 128 }).unwrap_or(ip.address);
            host.add_address(host_link.index, own)
                .map_err(netlink_error("add the gateway address on the host end"))?;
        }
    }
    for route in &result.routes {
        let gateway = route.gw.or_else(|| gateway_for(&result, route.dst.addr()));
        inside
            .add_route(route.dst, gateway, peer.index)
            .map_err(netlink_error("add a route in the container"))?;
    }

    let netns = req
        .netns
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    result.interfaces = vec![
        Interface {
            mac: host_link.mac,
            ..Interface::named(host_link.name)
        },
        Interface {
            mac: peer.mac,
            sandbox: netns,
            mtu: req.config.plugin.mtu,
            ..Interface::named(peer.name)
        },
    ];
    for ip in &mut result.ips {
        ip.interface = Some(1);
    }
    if let Some(dns) = req.config.dns.clone().filter(|d| !d.is_empty()) {
        result.dns = dns;
    }
    Ok(result)
}

/// The kernel brings a veth end's carrier up shortly after it is set up;
/// answer ADD only once the pair can carry traffic (as the reference bridge
/// plugin waits for its port). Bounded: about 1.3 s in all.
fn wait_until_up(netlink: &mut Netlink, index: u32, end: &str) -> Result<(), Error> {
    for delay_ms in [0, 5, 20, 50, 200, 1000] {
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        if netlink
            .is_oper_up(index)
            .map_err(netlink_error("read the link state"))?
        {
            return Ok(());
        }
    }
    Err(Error::new(
        Code::INTERNAL,
        format!("the {end} end of the veth pair did not come up"),
    ))
}

/// The gateway of the first address of the same family.
fn gateway_for(result: &Result100, dst: IpAddr) -> Option<IpAddr> {
    result
        .ips
        .iter()
        .filter(|ip| ip.address.addr().is_ipv4() == dst.is_ipv4())
        .find_map(|ip| ip.gateway)
}

/// CHECK: the container interface of the previous result is in the
/// namespace with its MAC, addresses and routes.
fn check_namespace(req: &Req, prev: &Result100, inside: &mut Netlink) -> Result<(), Error> {
    let differs = |what: String| {
        Error::new(
            NOT_AS_EXPECTED,
            "container network differs from the previous result",
        )
        .with_details(what)
    };
    let netns = req
        .netns
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let (index, expected) = prev
        .interfaces
        .iter()
        .enumerate()
        .find(|(_, i)| i.name == req.ifname && i.sandbox == netns)
        .ok_or_else(|| {
            differs(format!(
                "prevResult has no interface {:?} in {netns}",
                req.ifname
            ))
        })?;
    let link = inside
        .link_by_name(&req.ifname)
        .map_err(netlink_error("list container interfaces"))?
        .ok_or_else(|| differs(format!("interface {:?} is missing", req.ifname)))?;
    if !expected.mac.is_empty() && !expected.mac.eq_ignore_ascii_case(&link.mac) {
        return Err(differs(format!(
            "{} has MAC {}, prevResult says {}",
            link.name, link.mac, expected.mac
        )));
    }
    let addresses = inside
        .addresses(link.index)
        .map_err(netlink_error("list container addresses"))?;
    for ip in prev.ips.iter().filter(|ip| ip.interface == Some(index)) {
        if !addresses.contains(&ip.address) {
            return Err(differs(format!(
                "address {} is missing from {}",
                ip.address, link.name
            )));
        }
    }
    let routes = inside
        .route_destinations(link.index)
        .map_err(netlink_error("list container routes"))?;
    for route in &prev.routes {
        let dst = IpNetwork::new(route.dst.network(), route.dst.prefix()).unwrap_or(route.dst);
        if !routes.contains(&dst) {
            return Err(differs(format!("route to {} is missing", route.dst)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use cni_skel::TestRequest;
    use cni_version::PluginInfo;

    use super::*;

    fn add(conf: &str) -> cni_skel::Outcome {
        TestRequest::new("ADD")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/var/run/netns/does-not-exist")
            .env("CNI_IFNAME", "eth0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(conf)
            .run(&Veth, &PluginInfo::all())
    }

    #[test]
    fn bad_config_is_code_7_naming_the_field_before_anything_changes() {
        let err = add(r#"{"cniVersion":"1.0.0","name":"n","mtu":20,"ipam":{"type":"host-local"}}"#)
            .error()
            .unwrap();
        assert_eq!(
            (err.code, err.msg.as_str()),
            (Code::INVALID_NETWORK_CONFIG, "invalid mtu")
        );
        let err = add(r#"{"cniVersion":"1.0.0","name":"n"}"#).error().unwrap();
        assert_eq!(
            (err.code, err.msg.as_str()),
            (Code::INVALID_NETWORK_CONFIG, "invalid ipam.type")
        );
    }

    #[test]
    fn a_missing_namespace_is_code_8_naming_it() {
        let err = add(r#"{"cniVersion":"1.0.0","name":"n","ipam":{"type":"host-local"}}"#)
            .error()
            .unwrap();
        assert_eq!(err.code, Code::INVALID_NETNS);
        assert!(err.msg.contains("/var/run/netns/does-not-exist"), "{err:?}");
    }

    #[test]
    fn del_of_a_gone_namespace_only_needs_ipam() {
        // IPAM is the reference host-local (scripts/install-test-deps.sh)
        // with nothing reserved: its DEL succeeds, and so must ours.
        let dir = std::env::temp_dir().join(format!("veth-del-{}", std::process::id()));
        let conf = format!(
            r#"{{"cniVersion":"1.0.0","name":"n","ipam":{{"type":"host-local","dataDir":"{}","ranges":[[{{"subnet":"10.9.0.0/24"}}]]}}}}"#,
            dir.display()
        );
        let out = TestRequest::new("DEL")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/var/run/netns/does-not-exist")
            .env("CNI_IFNAME", "eth0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(conf)
            .run(&Veth, &PluginInfo::all());
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    }

    #[test]
    fn host_names_are_stable_short_and_distinct() {
        let a = host_name("c1", "eth0");
        assert_eq!(a, host_name("c1", "eth0"));
        assert!(a.len() <= 15 && a.starts_with("veth"));
        assert_ne!(a, host_name("c1", "eth1"));
        assert_ne!(a, host_name("c2", "eth0"));
    }
}
