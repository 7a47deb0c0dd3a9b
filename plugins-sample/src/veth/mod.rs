//! `veth`: an interface plugin that connects a container to the host with a
//! veth pair and delegates addressing to its IPAM plugin.
//!
//! ADD creates the pair with the container end directly inside `CNI_NETNS`
//! named `CNI_IFNAME` (MTU from `mtu`; the MAC address a runtime asked for,
//! as [`requested_mac`] finds it, so Podman's `--mac-address` is honoured)
//! while the `ipam.type` plugin runs,
//! puts the addresses and routes it returned on the container end, gives
//! the host end each subnet's gateway address (so the container reaches the
//! host through it) and a host route to each container address, and returns
//! the full result: host and container interfaces with MAC addresses, `ips`
//! on the container interface, routes, and DNS (the config's `dns`, else
//! IPAM's). When any step fails, the pair this ADD made is deleted and, if
//! IPAM had answered, the IPAM DEL runs before the error is returned.
//!
//! DEL deletes the pair while the IPAM DEL runs; a namespace or interface
//! that is already gone is success ([`Netns::of_for_del`]). The host end
//! is named from the container id and interface name
//! ([`host_veth_names`]: the next name when another attachment holds
//! one); DEL removes it from the container's side. CHECK verifies the previous result
//! against the namespace (interface, MAC, MTU, addresses, routes) and
//! delegates to IPAM. The kernel work is `cni_net`'s: `configure_iface` and
//! `check_interface` for the container end, `Netlink` for the host end.
//! GC and STATUS go to IPAM.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "pods", "type": "veth", "mtu": 1450,
//!  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.22.0.0/24"}]],
//!           "routes": [{"dst": "0.0.0.0/0"}]}}
//! ```

use std::time::Duration;

use cni_invoke::FirstError;
use cni_net::{ContainerVeth, Dad, NetError, Netlink, Netns, Op};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, Teardown, Undo};
use cni_types::conventions::{requested_mac, MacPrecedence};
use cni_types::{CniResult, Code, Error, Interface, IpNetwork, NetConf, Result100, Route};
use serde::Deserialize;

pub use cni_net::{host_veth_name, host_veth_names};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI veth sample plugin v0.1.0";

/// The container interface already exists in the namespace.
pub const INTERFACE_EXISTS: Code = Code(101);
/// CHECK found the namespace different from the previous result.
pub const NOT_AS_EXPECTED: Code = Code(102);

/// The plugin's own configuration keys.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// MTU of both ends (the kernel default when absent or 0, as the
    /// reference plugins read their Go `int`).
    #[serde(default)]
    pub mtu: Option<u32>,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Veth;

type Req<'a> = Request<'a, NetConf<Fields>>;

/// A kernel failure as this plugin reports it: what it was doing in
/// `msg`, the library's account (naming the object) in `details`.
fn failed(what: &str) -> impl FnOnce(NetError) -> Error + '_ {
    move |e| {
        let cni = Error::from(e);
        let details = [cni.msg.as_str(), cni.details.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(": ");
        Error::new(cni.code, format!("failed to {what}")).with_details(details)
    }
}

/// The validated configuration.
struct Plan {
    /// `ipam.type`.
    ipam: String,
    /// `mtu`, unless absent or 0 (see [`cni_net::configured_mtu`]).
    mtu: Option<u32>,
}

/// Validates the configuration before anything changes on the host.
fn validate(req: &Req) -> Result<Plan, Error> {
    let mtu = cni_net::configured_mtu(req.config.plugin.mtu)
        .map_err(|e| Error::invalid_config("mtu", e))?;
    let ipam = req.config.ipam_type()?.to_owned();
    Ok(Plan { ipam, mtu })
}

impl Plugin for Veth {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let plan = validate(req)?;
        let mac = requested_mac(&req.config, &req.args, None, MacPrecedence::Interface)?;
        let netns = Netns::of(req)?;
        let mut inside = netns.socket()?;
        if inside.find_link(&req.ifname)?.is_some() {
            return Err(
                Error::new(INTERFACE_EXISTS, "container interface already exists")
                    .with_details(format!("{:?} in {}", req.ifname, netns.path().display()))
                    .into(),
            );
        }
        let host = Netlink::open()?;
        let pair = ContainerVeth {
            container_id: &req.container_id,
            ifname: &req.ifname,
            netns: &netns,
            mtu: plan.mtu,
            mac: mac.map(|m| m.mac),
            master: None,
        };
        Undo::scope(|undo| {
            // The pair is made and brought up while the IPAM plugin, a
            // process of its own, runs: the two overlap (about 2 ms of an
            // ADD, BENCHMARKS.md). A failure after removes the pair this
            // ADD made (never a link that was there before) and releases
            // the reservation.
            let ((mut host, mut inside, host_index), ipam_result) =
                cni_invoke::add_alongside(&plan.ipam, req, undo, FirstError::Ipam, |undo| {
                    Ok(make_pair(host, inside, &pair, undo)?)
                })?;
            let result = configure(
                req,
                &plan,
                &netns,
                &ipam_result,
                host_index,
                &mut host,
                &mut inside,
            )?;
            Ok(result.into())
        })
    }

    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let ipam = validate(req)?.ipam;
        // The kernel takes tens of milliseconds to delete a link; the IPAM
        // DEL runs meanwhile instead of before it. A namespace that is
        // gone took the pair with it.
        let mut teardown = Teardown::new();
        cni_invoke::del_alongside(Some(&ipam), req, &mut teardown, || {
            if let Some(netns) = Netns::of_for_del(req)? {
                netns
                    .socket()?
                    .delete_link_if_present(req.ifname.as_str())
                    .map_err(failed("delete the veth pair"))?;
            }
            Ok(())
        });
        teardown.finish()
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let ipam = validate(req)?.ipam;
        let prev = req
            .config
            .prev_result
            .as_ref()
            .ok_or_else(|| Error::new(Code::INVALID_NETWORK_CONFIG, "CHECK needs a prevResult"))?
            .to_current()?;
        let netns = Netns::of(req)?;
        check_namespace(req, &netns, &prev, &mut netns.socket()?)?;
        cni_invoke::delegate_check(&ipam, req)?;
        Ok(())
    }

    fn gc(&self, req: &Req) -> Result<(), BoxError> {
        cni_invoke::delegate_gc(&validate(req)?.ipam, req)?;
        Ok(())
    }

    fn status(&self, req: &Req) -> Result<(), BoxError> {
        cni_invoke::delegate_status(&validate(req)?.ipam, req)?;
        Ok(())
    }
}

/// How long a veth end may take to come up once set up; bounded so a
/// stuck kernel is an error, not a hang.
const UP_TIMEOUT: Duration = Duration::from_millis(1500);

/// Creates the pair (its deletion pushed on `undo`), sets both ends up
/// and waits until the host end carries traffic; hands the sockets back
/// with the host end's index.
fn make_pair(
    mut host: Netlink,
    mut inside: Netlink,
    pair: &ContainerVeth,
    undo: &mut Undo,
) -> Result<(Netlink, Netlink, u32), Error> {
    let host_link = host
        .add_container_veth(pair)
        .map_err(failed("create the veth pair"))?;
    let index = host_link.index;
    undo.push(format!("deleting veth {}", host_link.name), move || {
        Netlink::open()?.delete_link_if_present(index)?;
        Ok(())
    });
    let peer = inside
        .link(pair.ifname)
        .map_err(failed("find the container end"))?;
    inside
        .set_up(peer.index)
        .map_err(failed("set the container interface up"))?;
    host.set_up(host_link.index)
        .map_err(failed("set the host interface up"))?;
    host.wait_until_up(host_link.index, UP_TIMEOUT)
        .map_err(failed("bring the host end up"))?;
    Ok((host, inside, host_link.index))
}

/// Everything after the pair exists: the container end configured from
/// the result, the host end up with each gateway address and a route to
/// each container address, and the result describing both ends.
fn configure(
    req: &Req,
    plan: &Plan,
    netns: &Netns,
    ipam_result: &CniResult,
    host_index: u32,
    host: &mut Netlink,
    inside: &mut Netlink,
) -> Result<Result100, BoxError> {
    let mut result = ipam_result.to_current()?;
    result.interfaces = vec![
        Interface::default(),
        Interface {
            sandbox: netns.path().display().to_string(),
            mtu: plan.mtu,
            ..Interface::named(req.ifname.clone())
        },
    ];
    for ip in &mut result.ips {
        ip.interface = Some(1);
    }
    // The container end is one half of a pair: no other host can hold its
    // addresses, so duplicate address detection is skipped.
    let peer = cni_net::configure_iface(inside, &req.ifname, &result, Dad::Skip).map_err(|e| {
        if e.op() == Some(Op::AddRoute) {
            failed("add a route in the container")(e)
        } else {
            failed("configure the container interface")(e)
        }
    })?;
    let host_link = host
        .find_link(host_index)?
        .ok_or_else(|| Error::new(Code::INTERNAL, "the host end of the pair vanished"))?;
    for ip in &result.ips {
        host.replace_route(
            host_index,
            &Route::new(IpNetwork::host(ip.address.addr()), None),
        )
        .map_err(failed("add the host route to the container"))?;
        if let Some(gw) = ip.gateway {
            host.add_address(host_index, IpNetwork::host(gw), Dad::Skip)
                .map_err(failed("add the gateway address on the host end"))?;
        }
    }

    result.interfaces[0] = host_link.interface();
    result.interfaces[1].mac = peer.interface().mac;
    if let Some(dns) = req.config.dns.clone().filter(|d| !d.is_empty()) {
        result.dns = dns;
    }
    Ok(result)
}

/// CHECK: the container interface of the previous result is in the
/// namespace with its MAC, MTU, addresses and routes.
fn check_namespace(
    req: &Req,
    netns: &Netns,
    prev: &Result100,
    inside: &mut Netlink,
) -> Result<(), Error> {
    let sandbox = netns.path().display().to_string();
    match cni_net::check_interface(inside, prev, &req.ifname, &sandbox) {
        Ok(_) => Ok(()),
        Err(NetError::Differs(what)) => Err(Error::new(
            NOT_AS_EXPECTED,
            "container network differs from the previous result",
        )
        .with_details(what)),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use cni_net::testing::TempNetns;
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
    fn an_mtu_of_0_reads_as_unset_as_the_reference_plugins_read_it() {
        let err = add(r#"{"cniVersion":"1.0.0","name":"n","mtu":0,"ipam":{"type":"host-local"}}"#)
            .error()
            .unwrap();
        // Past the configuration: the (absent) namespace is what fails.
        assert_eq!(err.code, Code::INVALID_NETNS, "{err:?}");
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

    /// A configuration on 10.9.1.0/24, the reference host-local storing
    /// in `ipam_dir`.
    fn ipam_conf(ipam_dir: &std::path::Path) -> String {
        format!(
            r#"{{"cniVersion":"1.0.0","name":"n","ipam":{{"type":"host-local","dataDir":"{}","ranges":[[{{"subnet":"10.9.1.0/24"}}]]}}}}"#,
            ipam_dir.display()
        )
    }

    /// ADD run in-process with the test's thread inside `host` (so the
    /// host ends land there, not in the machine's namespace) and the
    /// container in `container`; IPAM is the reference host-local.
    fn add_between(
        host: &TempNetns,
        container: &TempNetns,
        ipam_dir: &std::path::Path,
    ) -> cni_skel::Outcome {
        let req = container
            .request("ADD", "eth0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(ipam_conf(ipam_dir));
        host.run(|_| Ok::<_, NetError>(req.run(&Veth, &PluginInfo::all())))
            .unwrap()
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_second_container_whose_host_name_collides_is_attached_under_the_next() {
        let host = TempNetns::new("veth-host").unwrap();
        let container = TempNetns::new("veth-cont").unwrap();
        let mut names = host_veth_names(container.name(), "eth0");
        let (taken, next) = (names.next().unwrap(), names.next().unwrap());
        // Another attachment's host end, under the name this one derives.
        host.add_veth(&taken, "taken-peer", None).unwrap();
        let ipam = tempfile::tempdir().unwrap();

        let out = add_between(&host, &container, ipam.path());
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(out.json()["interfaces"][0]["name"], next.as_str());
        let mut nl = host.socket().unwrap();
        assert!(nl.find_link(taken.as_str()).unwrap().is_some(), "untouched");
        let del = container
            .request("DEL", "eth0")
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(ipam_conf(ipam.path()));
        let del = host
            .run(|_| Ok::<_, NetError>(del.run(&Veth, &PluginInfo::all())))
            .unwrap();
        assert_eq!(del.exit_code, 0, "{:?}", del.error());
        assert!(
            nl.find_link(next.as_str()).unwrap().is_none(),
            "ours removed"
        );
        assert!(
            nl.find_link(taken.as_str()).unwrap().is_some(),
            "theirs kept"
        );
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_failed_add_leaves_host_links_of_the_same_names_alone() {
        let host = TempNetns::new("veth-host").unwrap();
        let container = TempNetns::new("veth-cont").unwrap();
        let taken: Vec<String> = host_veth_names(container.name(), "eth0").collect();
        for (n, name) in taken.iter().enumerate() {
            host.add_veth(name, &format!("taken-peer{n}"), None)
                .unwrap();
        }
        let ipam = tempfile::tempdir().unwrap();

        let err = add_between(&host, &container, ipam.path()).error().unwrap();
        assert_eq!(err.msg, "failed to create the veth pair", "{err:?}");
        let last = taken.last().unwrap();
        assert!(err.details.contains(&format!("{last:?}")), "{err:?}");
        let mut nl = host.socket().unwrap();
        for name in &taken {
            assert!(nl.find_link(name.as_str()).unwrap().is_some(), "untouched");
        }
        assert!(container
            .socket()
            .unwrap()
            .find_link("eth0")
            .unwrap()
            .is_none());
        let reserved: Vec<_> = std::fs::read_dir(ipam.path().join("n"))
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("10.9.1."))
            .collect();
        assert_eq!(reserved, Vec::<String>::new(), "the address was released");
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn an_add_in_process_configures_both_ends() {
        let host = TempNetns::new("veth-host").unwrap();
        let container = TempNetns::new("veth-cont").unwrap();
        let ipam = tempfile::tempdir().unwrap();
        let out = add_between(&host, &container, ipam.path());
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
        let json = out.json();
        assert_eq!(json["ips"][0]["address"], "10.9.1.2/24");
        let eth0 = container.socket().unwrap().link("eth0").unwrap();
        assert!(eth0.up && eth0.oper_up);
        assert_eq!(json["interfaces"][1]["mac"], eth0.mac.unwrap().to_string());
        let mut nl = host.socket().unwrap();
        let host_end = nl.link(host_veth_name(container.name(), "eth0")).unwrap();
        let routes = nl.routes().unwrap();
        assert!(
            routes
                .iter()
                .any(|r| r.oif == Some(host_end.index)
                    && r.route.dst == "10.9.1.2/32".parse().unwrap()),
            "host route to the container: {routes:?}"
        );
    }
}
