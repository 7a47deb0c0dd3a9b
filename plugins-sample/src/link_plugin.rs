//! What the plugins that make one link in the container share: `macvlan`,
//! `ipvlan` and `vlan` make it on a master (parent) link, straight into
//! the container's namespace under a temporary name, renamed to
//! `CNI_IFNAME` ([`add`], from a [`Plan`]); `tap` and `dummy` make it
//! inside. Then [`attach`] addresses it from IPAM (or a chained result,
//! or sets it up without addresses); [`del`] deletes it; [`check`]
//! compares it with `prevResult`.
//!
//! Go: the shared shape of containernetworking/plugins
//! `plugins/main/{macvlan,ipvlan,vlan,tap,dummy}`.

use cni_net::{Dad, Link, LinkKind, Mac, NetError, Netlink, Netns, Sublink, SublinkKind};
use cni_skel::{BoxError, Reply, Request};
use cni_types::{Code, Error, Interface, NetConf, Result100, SpecVersion};

/// The validated configuration of one ADD or CHECK.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The master link, in the host's namespace or (with `in_container`)
    /// the container's.
    pub master: Link,
    /// `linkInContainer`: the master is in the container's namespace.
    pub in_container: bool,
    /// What to create on it.
    pub kind: SublinkKind,
    /// `mtu`, unless absent or 0 (the master's then).
    pub mtu: Option<u32>,
    /// The MAC asked for (macvlan only).
    pub mac: Option<Mac>,
    /// `ipam.type`, when there is one.
    pub ipam: Option<String>,
    /// ipvlan in a chain without IPAM: the previous plugin's result,
    /// whose addresses go on the new link.
    pub chained: Option<Result100>,
}

/// `ipam.type`, when there is one.
pub(crate) fn ipam_type<F>(req: &Request<NetConf<F>>) -> Option<String> {
    let ipam = req.config.ipam.as_ref().map(|i| i.ipam_type.clone());
    ipam.filter(|t| !t.is_empty())
}

/// The master link: `name`, or (empty) the link of the first default
/// route of the main table, looked up in the host's namespace or with
/// `in_container` the container's. Code 7 naming `master` when there is
/// none, saying so when the name is a link of the other namespace.
///
/// Go: `getNamespacedDefaultRouteInterfaceName` and `getMTUByName`.
pub(crate) fn find_master(netns: &Netns, name: &str, in_container: bool) -> Result<Link, Error> {
    let (mut here, where_) = if in_container {
        (netns.socket()?, "the container's namespace")
    } else {
        (Netlink::open()?, "the host's namespace")
    };
    if name.is_empty() {
        let default = here
            .routes()?
            .into_iter()
            .filter(|r| r.route.table.unwrap_or(cni_net::MAIN_TABLE) == cni_net::MAIN_TABLE)
            .find(|r| r.route.dst.prefix() == 0)
            .and_then(|r| r.oif);
        let index = default.ok_or_else(|| {
            Error::invalid_config(
                "master",
                format!("not set, and no default route interface found in {where_}"),
            )
        })?;
        return Ok(here.link(index)?);
    }
    if let Some(link) = here.find_link(name).map_err(invalid_master)? {
        return Ok(link);
    }
    let (mut other, hint) = if in_container {
        (Netlink::open()?, "the host's: unset linkInContainer")
    } else {
        (netns.socket()?, "the container's: set linkInContainer")
    };
    let detail = match other.find_link(name) {
        Ok(Some(_)) => format!("link {name:?} is not in {where_}; it is in {hint}"),
        _ => format!("link {name:?} not found in {where_}"),
    };
    Err(Error::invalid_config("master", detail))
}

fn invalid_master(e: NetError) -> Error {
    Error::invalid_config("master", e)
}

/// `mtu`: 0 or absent is the master's; otherwise at least 68 and at most
/// the master's MTU (code 7, as the reference words it).
pub(crate) fn check_mtu(mtu: Option<i64>, master: &Link) -> Result<Option<u32>, Error> {
    match mtu.unwrap_or(0) {
        0 => Ok(None),
        m if (68..=i64::from(master.mtu)).contains(&m) => Ok(Some(m as u32)),
        m => Err(Error::invalid_config(
            "mtu",
            format!(
                "invalid MTU {m}, must be [0, master MTU({})] and at least 68",
                master.mtu
            ),
        )),
    }
}

/// ADD for a link on a master: creates it, renames it, then [`attach`];
/// a failure removes the link.
pub(crate) fn add<F>(req: &Request<NetConf<F>>, plan: &Plan) -> Result<Reply, BoxError> {
    let netns = Netns::of(req)?;
    let temporary = cni_net::host_veth_name(&req.container_id, &req.ifname);
    let mut sublink = Sublink {
        name: &temporary,
        parent: plan.master.index,
        kind: plan.kind,
        netns: Some(&netns),
        mtu: plan.mtu,
        mac: plan.mac,
    };
    let mut creator = if plan.in_container {
        sublink.netns = None;
        netns.socket()?
    } else {
        Netlink::open()?
    };
    creator.add_sublink(&sublink)?;
    let mut inside = netns.socket()?;
    let addressing = Addressing {
        ipam: plan.ipam.clone(),
        chained: plan.chained.clone(),
        ipam_dns: false,
    };
    let created = inside.link(temporary.as_str())?.index;
    let done = rename(req, &mut inside, &temporary)
        .and_then(|()| attach(req, &addressing, &netns, &mut inside));
    if done.is_err() {
        // By index: `CNI_IFNAME` may be a live attachment's link that the
        // rename ran into.
        let _ = inside.delete_link(created);
    }
    done
}

/// Renames the new link from its temporary name to `CNI_IFNAME`.
pub(crate) fn rename<F>(
    req: &Request<NetConf<F>>,
    inside: &mut Netlink,
    temporary: &str,
) -> Result<(), BoxError> {
    let link = inside.link(temporary)?;
    inside.rename(link.index, &req.ifname)?;
    Ok(())
}

/// Where the new link's addresses come from.
#[derive(Debug, Default)]
pub(crate) struct Addressing {
    /// `ipam.type`, when there is one.
    pub ipam: Option<String>,
    /// A chained result whose addresses to use when there is no IPAM.
    pub chained: Option<Result100>,
    /// Keep IPAM's DNS (the reference `dummy`) rather than replace it by
    /// the configuration's (the others).
    pub ipam_dns: bool,
}

/// The rest of ADD once link `CNI_IFNAME` exists (down) in the
/// container: addresses and routes from IPAM (released again when
/// anything after fails) or from the chained result, else just up; then
/// the result of the one interface, with the configuration's DNS. The
/// caller removes the link on failure.
pub(crate) fn attach<F>(
    req: &Request<NetConf<F>>,
    plan: &Addressing,
    netns: &Netns,
    inside: &mut Netlink,
) -> Result<Reply, BoxError> {
    let link = inside.link(&req.ifname)?;
    let interface = Interface {
        mac: link.mac.map(|m| m.to_string()).unwrap_or_default(),
        sandbox: req.sandbox(),
        ..Interface::named(req.ifname.clone())
    };
    let mut result = match (&plan.ipam, &plan.chained) {
        (Some(ipam), _) => cni_invoke::add_with_cleanup(ipam, req, |r| {
            address(req, netns, inside, &interface, r.to_current()?)
        })?,
        (None, Some(chained)) => address(req, netns, inside, &interface, chained.clone())?,
        (None, None) => {
            inside.set_up(link.index)?;
            let mut result = Result100::new(SpecVersion::V1_0_0);
            result.interfaces = vec![interface];
            result
        }
    };
    result.cni_version = SpecVersion::V1_0_0;
    if !plan.ipam_dns {
        // The configuration's DNS, never IPAM's, as the reference does.
        result.dns = req.config.dns.clone().unwrap_or_default();
    }
    Ok(result.into())
}

/// The addresses and routes of `result` on the new link, which becomes
/// the result's one interface.
fn address<F>(
    req: &Request<NetConf<F>>,
    netns: &Netns,
    inside: &mut Netlink,
    interface: &Interface,
    mut result: Result100,
) -> Result<Result100, BoxError> {
    if result.ips.is_empty() {
        let msg = "IPAM plugin returned missing IP config";
        return Err(Error::new(Code::INTERNAL, msg).into());
    }
    for ip in &mut result.ips {
        ip.interface = Some(0);
    }
    result.interfaces = vec![interface.clone()];
    // Neighbours learn the new address at once; best effort, as in
    // the reference.
    for key in [
        "net.ipv4.conf.IFNAME.arp_notify",
        "net.ipv6.conf.IFNAME.ndisc_notify",
    ] {
        if let Ok(name) = cni_net::sysctl_for_ifname(key, &req.ifname) {
            let _ = netns.set_sysctl(&name, "1");
        }
    }
    cni_net::configure_iface(inside, &req.ifname, &result, Dad::Run)?;
    Ok(result)
}

/// DEL: releases the IPAM reservation and deletes `CNI_IFNAME`; a
/// namespace or link already gone is success. IPAM's error is reported
/// after the link is gone.
pub(crate) fn del<F>(req: &Request<NetConf<F>>) -> Result<(), BoxError> {
    let released = match ipam_type(req) {
        Some(ipam) => cni_invoke::delegate_del(&ipam, req),
        None => Ok(()),
    };
    if let Some(netns) = Netns::of_for_del(req)? {
        netns.socket()?.delete_link_if_present(&req.ifname)?;
    }
    released?;
    Ok(())
}

/// What CHECK compares: the kind and its settings, `ipam.type`, and the
/// MTU when the plugin checks it (the reference `vlan` does).
#[derive(Debug)]
pub(crate) struct Expected {
    /// The link's kind; `None`: any (tap, whose reference CHECK does not
    /// look).
    pub kind: Option<LinkKind>,
    /// A sublink's mode or VLAN id.
    pub settings: Option<SublinkKind>,
    /// `ipam.type`, when there is one.
    pub ipam: Option<String>,
    /// The MTU the link must have.
    pub mtu: Option<u32>,
}

impl Plan {
    /// What CHECK compares of this plan; `check_mtu` for `vlan`.
    pub(crate) fn expected(&self, check_mtu: bool) -> Expected {
        Expected {
            kind: Some(self.kind.link_kind()),
            settings: Some(self.kind),
            ipam: self.ipam.clone(),
            mtu: self.mtu.filter(|_| check_mtu),
        }
    }
}

/// CHECK: IPAM's CHECK, then `prevResult`'s interface for `CNI_IFNAME`
/// in this namespace against the link: its kind and settings (mode, VLAN
/// id), MAC, addresses and routes.
pub(crate) fn check<F>(req: &Request<NetConf<F>>, plan: &Expected) -> Result<(), BoxError> {
    let netns = Netns::of(req)?;
    if let Some(ipam) = &plan.ipam {
        cni_invoke::delegate_check(ipam, req)?;
    }
    let prev = req.prev_result()?;
    let mut inside = netns.socket()?;
    let link = cni_net::check_interface(&mut inside, &prev, &req.ifname, &req.sandbox())
        .map_err(|e| e.with_code(Code::INTERNAL))?;
    let differs = |msg: String| -> BoxError { Error::new(Code::INTERNAL, msg).into() };
    if let Some(kind) = plan
        .kind
        .as_ref()
        .filter(|k| link.kind.as_ref() != Some(*k))
    {
        return Err(differs(format!(
            "Error: Container interface {} not of type {kind}",
            link.name
        )));
    }
    if let Some(want) = plan.settings {
        let have = inside.sublink_kind(link.index)?;
        if let Some(have) = have.filter(|h| !same_settings(*h, want)) {
            return Err(differs(format!(
                "container {} {} does not match expected value: {}",
                want.name(),
                describe(have),
                describe(want)
            )));
        }
    }
    match plan.mtu.filter(|m| *m != link.mtu) {
        Some(mtu) => Err(differs(format!(
            "Error: configured MTU of {} is {mtu}, current value is {}",
            link.name, link.mtu
        ))),
        None => Ok(()),
    }
}

/// Whether a live link has the settings CHECK compares: the kind and its
/// mode or VLAN id (a macvlan's broadcast queue is not compared, as in
/// the reference).
fn same_settings(have: SublinkKind, want: SublinkKind) -> bool {
    match (have, want) {
        (SublinkKind::Macvlan { mode: a, .. }, SublinkKind::Macvlan { mode: b, .. }) => a == b,
        (a, b) => a == b,
    }
}

fn describe(kind: SublinkKind) -> String {
    match kind {
        SublinkKind::Macvlan { mode, .. } => format!("mode {mode}"),
        SublinkKind::Ipvlan { mode } => format!("mode {mode}"),
        SublinkKind::Vlan { id } => format!("vlan id {id}"),
    }
}

/// GC: IPAM's, when there is one (the reference's GC is a FIXME; the
/// links went with their namespaces).
pub(crate) fn gc<F>(req: &Request<NetConf<F>>) -> Result<(), BoxError> {
    if let Some(ipam) = ipam_type(req) {
        cni_invoke::delegate_gc(&ipam, req)?;
    }
    Ok(())
}

/// STATUS: IPAM's, when there is one.
pub(crate) fn status<F>(req: &Request<NetConf<F>>) -> Result<(), BoxError> {
    if let Some(ipam) = ipam_type(req) {
        cni_invoke::delegate_status(&ipam, req)?;
    }
    Ok(())
}

/// The addresses host-local (storing in `dir`) holds for `network`: what
/// the tests of these plugins expect gone after DEL or a failed ADD.
#[cfg(test)]
pub(crate) fn held_addresses(dir: &std::path::Path, network: &str) -> Vec<String> {
    std::fs::read_dir(dir.join(network))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
        .collect()
}
