//! The plugin kit of the plugins that make one link in the container:
//! `macvlan`, `ipvlan` and `vlan` make it on a master (parent) link,
//! straight into the container's namespace under a temporary name, then
//! rename it `CNI_IFNAME` ([`add`], from a [`Plan`]); `tap` and `dummy`
//! make it inside and call [`attach`]. [`del`] deletes it, [`check`]
//! compares it with `prevResult`, [`gc`] and [`status`] go to IPAM.
//!
//! What every such plugin must do, and does here once:
//! - **Name.** A new link is made under a temporary name derived from the
//!   attachment ([`crate::host_veth_name`]) and renamed to `CNI_IFNAME`
//!   only when it is in the container: a half-made link never takes the
//!   name a runtime looks for, and a repeated ADD fails at the rename
//!   without touching the live link of that name.
//! - **IPAM after the link.** The IPAM plugin's ADD runs once the link
//!   has its name ([`add`] says why not alongside it, as `bridge` and
//!   `ptp` do with [`cni_invoke::add_alongside`]); when anything after
//!   fails, the link is deleted (by index) and the reservation released,
//!   every failure reported ([`cni_skel::Undo`]).
//! - **DEL removes the link even when IPAM's DEL fails**, after it (a
//!   `dhcp` lease is released from the link), and reports IPAM's error;
//!   a namespace or link already gone is success.
//! - **DNS in the result comes from the configuration's `dns`**, never
//!   from IPAM's, as the reference plugins do (`dummy` keeps IPAM's:
//!   [`Addressing::ipam_dns`]).
//!
//! ```no_run
//! use cni_net::link_plugin::{self, Plan};
//! use cni_net::{Netns, SublinkKind};
//! use cni_skel::{BoxError, Reply, Request};
//! use cni_types::NetConf;
//!
//! // A macvlan plugin's ADD, its configuration already validated.
//! fn add(req: &Request<NetConf>) -> Result<Reply, BoxError> {
//!     let netns = Netns::of(req)?;
//!     let master = link_plugin::find_master(&netns, "eth0", false)?;
//!     let plan = Plan {
//!         mtu: link_plugin::check_mtu(None, &master)?,
//!         master,
//!         in_container: false,
//!         kind: SublinkKind::Macvlan { mode: Default::default(), bcqueuelen: None },
//!         mac: None,
//!         ipam: req.config.ipam_plugin().map(str::to_owned),
//!         chained: None,
//!     };
//!     link_plugin::add(req, &plan)
//! }
//! ```
//!
//! Go: the shared shape of containernetworking/plugins
//! `plugins/main/{macvlan,ipvlan,vlan,tap,dummy}`.

use cni_skel::{BoxError, Reply, Request, Teardown, Undo};
use cni_types::{CniResult, Code, Error, Interface, NetConf, Result100, SpecVersion};

use crate::{Dad, Link, LinkKind, Mac, NetError, Netlink, Netns, Sublink, SublinkKind};

/// The validated configuration of one ADD or CHECK of a link made on a
/// master.
#[derive(Debug)]
pub struct Plan {
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

/// The master link: `name`, or (empty) the link of the first default
/// route of the main table, looked up in the host's namespace or with
/// `in_container` the container's. Code 7 naming `master` when there is
/// none, saying so when the name is a link of the other namespace.
///
/// Go: `getNamespacedDefaultRouteInterfaceName` and `getMTUByName`.
pub fn find_master(netns: &Netns, name: &str, in_container: bool) -> Result<Link, Error> {
    let (mut here, where_) = if in_container {
        (netns.socket()?, "the container's namespace")
    } else {
        (Netlink::open()?, "the host's namespace")
    };
    if name.is_empty() {
        let default = here
            .routes()?
            .into_iter()
            .filter(|r| r.route.table.unwrap_or(crate::MAIN_TABLE) == crate::MAIN_TABLE)
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
pub fn check_mtu(mtu: Option<i64>, master: &Link) -> Result<Option<u32>, Error> {
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

/// ADD of a link on a master: made under a temporary name in the
/// container, renamed to `CNI_IFNAME`, then addressed from IPAM; any
/// failure deletes it and releases the reservation.
///
/// IPAM runs after the rename, not alongside the link as `bridge` and
/// `ptp` run it: these plugins are the ones paired with `dhcp`, whose
/// daemon answers a repeated ADD with the live lease, so a repeated ADD
/// must fail at the rename before IPAM runs (and its undo releases the
/// lease of the live pod), as the reference's order ensures.
pub fn add<F: Sync>(req: &Request<NetConf<F>>, plan: &Plan) -> Result<Reply, BoxError> {
    let netns = Netns::of(req)?;
    let addressing = Addressing {
        ipam: plan.ipam.clone(),
        chained: plan.chained.clone(),
        ipam_dns: false,
    };
    Undo::scope(|undo| {
        create_on_master(req, plan, &netns, undo)?;
        let mut inside = netns.socket()?;
        attach(req, &addressing, &netns, &mut inside, undo)
    })
}

/// The link on the master, in the container as `CNI_IFNAME` (down), its
/// deletion pushed on `undo`.
fn create_on_master<'a, F>(
    req: &Request<NetConf<F>>,
    plan: &Plan,
    netns: &'a Netns,
    undo: &mut Undo<'a>,
) -> Result<Link, BoxError> {
    let temporary = crate::host_veth_name(&req.container_id, &req.ifname);
    let mut sublink = Sublink {
        name: &temporary,
        parent: plan.master.index,
        kind: plan.kind,
        netns: Some(netns),
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
    let created = inside.link(temporary.as_str())?.index;
    // By index: `CNI_IFNAME` may be a live attachment's link that the
    // rename runs into.
    push_delete(undo, netns, created);
    inside.rename(created, &req.ifname)?;
    Ok(inside.link(created)?)
}

/// Pushes the deletion of link `index` of `netns` on `undo`.
pub fn push_delete<'a>(undo: &mut Undo<'a>, netns: &'a Netns, index: u32) {
    undo.push(
        format!("deleting link {index} of {}", netns.path().display()),
        move || {
            netns.socket()?.delete_link_if_present(index)?;
            Ok(())
        },
    );
}

/// Renames link `temporary` of `inside` to `CNI_IFNAME`.
pub fn rename<F>(
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
pub struct Addressing {
    /// `ipam.type`, when there is one.
    pub ipam: Option<String>,
    /// A chained result whose addresses to use when there is no IPAM.
    pub chained: Option<Result100>,
    /// Keep IPAM's DNS (the reference `dummy`) rather than replace it by
    /// the configuration's (the others).
    pub ipam_dns: bool,
}

/// The rest of ADD once link `CNI_IFNAME` exists (down) in the container
/// (its deletion already on `undo`): IPAM's ADD (its release pushed on
/// `undo`), or the chained result, else just up; then the result of the
/// one interface, with the configuration's DNS.
pub fn attach<'a, F: Sync>(
    req: &'a Request<NetConf<F>>,
    plan: &'a Addressing,
    netns: &Netns,
    inside: &mut Netlink,
    undo: &mut Undo<'a>,
) -> Result<Reply, BoxError> {
    let ipam_result = match &plan.ipam {
        Some(ipam) => Some(cni_invoke::add_ipam(ipam, req, undo)?),
        None => None,
    };
    configure(req, plan, netns, inside, ipam_result)
}

/// The addresses of IPAM's result (or the chained one) on `CNI_IFNAME`,
/// or the link just set up; the result.
fn configure<F>(
    req: &Request<NetConf<F>>,
    plan: &Addressing,
    netns: &Netns,
    inside: &mut Netlink,
    ipam_result: Option<CniResult>,
) -> Result<Reply, BoxError> {
    let link = inside.link(&req.ifname)?;
    let interface = link.interface_in(req.sandbox());
    let mut result = match (ipam_result, &plan.chained) {
        (Some(ipam), _) => address(req, netns, inside, &interface, ipam.to_current()?)?,
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
        return Err(missing_ip_config().into());
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
        if let Ok(name) = crate::sysctl_for_ifname(key, &req.ifname) {
            let _ = netns.set_sysctl(&name, "1");
        }
    }
    crate::configure_iface(inside, &req.ifname, &result, Dad::Run)?;
    Ok(result)
}

/// IPAM answered without an address: code 999 in the reference's words.
pub fn missing_ip_config() -> Error {
    Error::new(Code::INTERNAL, "IPAM plugin returned missing IP config")
}

/// DEL: IPAM's DEL releases the reservation, then `CNI_IFNAME` is
/// deleted whatever IPAM answered ([`remove_link`]); every failure is
/// reported, IPAM's first.
///
/// In this order, not at once as [`cni_invoke::del_alongside`] runs them:
/// `dhcp`, the IPAM plugin these links are paired with, releases its
/// lease with a DHCPRELEASE sent from the container's link, which must
/// still be there (the reference runs `ipam.ExecDel` first too).
pub fn del<F>(req: &Request<NetConf<F>>) -> Result<(), BoxError> {
    let mut teardown = Teardown::new();
    if let Some(ipam) = req.config.ipam_plugin() {
        teardown.keep(
            "releasing the addresses",
            cni_invoke::delegate_del(ipam, req),
        );
    }
    teardown.keep("removing the interface", remove_link(req));
    teardown.finish()
}

/// Deletes `CNI_IFNAME` in the container's namespace; a namespace or link
/// already gone is success (what every DEL of a link does).
pub fn remove_link<C>(req: &Request<C>) -> Result<(), BoxError> {
    if let Some(netns) = Netns::of_for_del(req)? {
        netns
            .socket()?
            .delete_link_if_present(req.ifname.as_str())?;
    }
    Ok(())
}

/// What CHECK compares: the kind and its settings, `ipam.type`, and the
/// MTU when the plugin checks it (the reference `vlan` does).
#[derive(Debug)]
pub struct Expected {
    /// The link's kind; `None`: any (tap, whose reference CHECK does not
    /// look).
    pub kind: Option<LinkKind>,
    /// A sublink's mode or VLAN id.
    pub settings: Option<SublinkKind>,
    /// `ipam.type`, when there is one.
    pub ipam: Option<String>,
    /// The MTU the link must have.
    pub mtu: Option<u32>,
    /// The words a missing `prevResult` is answered with (code 7), a
    /// drop-in's being its reference plugin's (vlan's "vlan: Required
    /// prevResult missing"); `None`: the SDK's
    /// ([`Request::prev_result`]).
    pub missing_prev_result: Option<&'static str>,
}

impl Plan {
    /// What CHECK compares of this plan; `check_mtu` for `vlan`.
    pub fn expected(&self, check_mtu: bool) -> Expected {
        Expected {
            kind: Some(self.kind.link_kind()),
            settings: Some(self.kind),
            ipam: self.ipam.clone(),
            mtu: self.mtu.filter(|_| check_mtu),
            missing_prev_result: None,
        }
    }
}

/// CHECK: IPAM's CHECK, then `prevResult`'s interface for `CNI_IFNAME`
/// in this namespace against the link: its kind and settings (mode, VLAN
/// id), MAC, addresses and routes.
pub fn check<F>(req: &Request<NetConf<F>>, plan: &Expected) -> Result<(), BoxError> {
    let netns = Netns::of(req)?;
    if let Some(ipam) = &plan.ipam {
        cni_invoke::delegate_check(ipam, req)?;
    }
    let prev = match plan.missing_prev_result {
        Some(words) => req.prev_result_or(words)?,
        None => req.prev_result()?,
    };
    let mut inside = netns.socket()?;
    let link = crate::check_interface(&mut inside, &prev, &req.ifname, &req.sandbox())
        .map_err(|e| e.with_code(Code::INTERNAL))?;
    if let Some(kind) = plan
        .kind
        .as_ref()
        .filter(|k| link.kind.as_ref() != Some(*k))
    {
        return Err(crate::differs(format!(
            "Error: Container interface {} not of type {kind}",
            link.name
        ))
        .into());
    }
    if let Some(want) = plan.settings {
        let have = inside.sublink_kind(link.index)?;
        if let Some(have) = have.filter(|h| !same_settings(*h, want)) {
            return Err(crate::differs(format!(
                "container {} {} does not match expected value: {}",
                want.name(),
                describe(have),
                describe(want)
            ))
            .into());
        }
    }
    match plan.mtu.filter(|m| *m != link.mtu) {
        Some(mtu) => Err(crate::differs(format!(
            "Error: configured MTU of {} is {mtu}, current value is {}",
            link.name, link.mtu
        ))
        .into()),
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
pub fn gc<F>(req: &Request<NetConf<F>>) -> Result<(), BoxError> {
    if let Some(ipam) = req.config.ipam_plugin() {
        cni_invoke::delegate_gc(ipam, req)?;
    }
    Ok(())
}

/// STATUS: IPAM's, when there is one.
pub fn status<F>(req: &Request<NetConf<F>>) -> Result<(), BoxError> {
    if let Some(ipam) = req.config.ipam_plugin() {
        cni_invoke::delegate_status(ipam, req)?;
    }
    Ok(())
}
