//! The host end of a container's veth, and the qdiscs, filter and ifb
//! that shape it: installed (ADD), compared (CHECK), removed (DEL).

use cni_net::tc::{Handle, Psched, QdiscKind, Redirect, Tbf};
use cni_net::{differs, Link, LinkKind, Netlink, Netns};
use cni_types::{Code, Error, Result100};

use super::Shaping;

/// The reference's ifb names: this prefix, then hex digits of a hash.
const IFB_PREFIX: &str = "bwp";
/// The kernel's longest interface name.
const IFB_NAME_LEN: usize = 15;
/// The handle of each tbf and of the ingress qdisc.
const TBF: Handle = Handle::new(1, 0);
const INGRESS: Handle = Handle::new(0xffff, 0);

/// The ifb of an attachment: `bwp` and the first 12 hex digits of the
/// SHA-512 of the network name followed by the container ID.
///
/// ```
/// let name = plugins_sample::bandwidth::ifb_name("net1", "c1");
/// assert_eq!(name, "bwpc2d892b58e87");
/// ```
///
/// Go: `getIfbDeviceName` (`utils.MustFormatHashWithPrefix`).
pub fn ifb_name(network: &str, container_id: &str) -> String {
    cni_netfilter::hashed(
        IFB_PREFIX,
        &format!("{network}{container_id}"),
        IFB_NAME_LEN,
    )
}

/// GC: deletes the ifbs of finished ADDs that no link redirects to any
/// more (their pod's host end went with its namespace), except `kept`
/// (the ifbs of this network's valid attachments); returns their names.
///
/// An ifb's name is a one-way hash of network and container, so it cannot
/// say whose it is: one that a link still redirects to may be a live pod's
/// of another network, and is kept. An ifb without its tbf is an ADD in
/// progress (the tbf comes last) or one killed midway, left to its DEL.
///
/// Go: none; the reference's bandwidth has no GC.
pub(super) fn collect_orphans(kept: &[String]) -> Result<Vec<String>, Error> {
    let mut nl = Netlink::open()?;
    let links = nl.links()?;
    let mut redirected = Vec::new();
    for link in links.iter().filter(|l| l.kind != Some(LinkKind::Ifb)) {
        for filter in nl.filters(link.index, INGRESS)? {
            redirected.extend(filter.redirects_to);
        }
    }
    let mut collected = Vec::new();
    for ifb in links.iter().filter(|l| {
        l.kind == Some(LinkKind::Ifb)
            && l.name.starts_with(IFB_PREFIX)
            && l.name.len() == IFB_NAME_LEN
            && !kept.contains(&l.name)
            && !redirected.contains(&l.index)
    }) {
        let shaped = nl
            .qdiscs(ifb.index)?
            .iter()
            .any(|q| q.handle == TBF && matches!(q.kind, QdiscKind::Tbf(_)));
        if shaped && nl.delete_link_if_present(ifb.index)? {
            collected.push(ifb.name.clone());
        }
    }
    Ok(collected)
}

/// The host end of the container's veth, on a socket in the host's (the
/// plugin's) namespace.
pub(super) struct HostEnd {
    nl: Netlink,
    link: Link,
}

/// What ADD added that the result reports.
#[derive(Debug, Default)]
pub(super) struct Installed {
    /// The ifb, when egress is shaped.
    pub ifb: Option<Link>,
}

/// What ADD created so far, undone when a later step fails.
#[derive(Debug, Default)]
struct Created {
    root_tbf: bool,
    ingress_qdisc: bool,
    ifb: Option<u32>,
}

impl HostEnd {
    /// The veth peer of `ifname` in `netns`, which `result` must list
    /// without a sandbox (the reference's `getHostInterface`).
    pub fn find(netns: &Netns, ifname: &str, result: &Result100) -> Result<HostEnd, Error> {
        if result.interfaces.is_empty() {
            return Err(Error::invalid_config(
                "prevResult",
                "no interfaces provided",
            ));
        }
        let container = netns.socket()?.link(ifname)?;
        let peer = container.veth_peer().ok_or_else(|| {
            Error::new(
                Code::INTERNAL,
                format!("container interface {ifname} has no veth peer"),
            )
        })?;
        let mut nl = Netlink::open()?;
        let link = nl.find_link(peer)?.ok_or_else(|| {
            Error::new(
                Code::INTERNAL,
                format!("veth peer with index {peer} is not in host ns"),
            )
        })?;
        if !result
            .interfaces
            .iter()
            .any(|i| i.sandbox.is_empty() && i.name == link.name)
        {
            return Err(Error::invalid_config(
                "prevResult",
                format_args!(
                    "no veth peer of container interface found in host ns: \
                     {:?}, the peer of {ifname}, is not among its host interfaces",
                    link.name
                ),
            ));
        }
        Ok(HostEnd { nl, link })
    }

    /// Installs `shaping`, egress through the ifb `ifb`; on failure,
    /// removes what it installed and answers the first error.
    pub fn install(&mut self, shaping: &Shaping, ifb: &str) -> Result<Installed, Error> {
        let clock = Psched::read()?;
        let mut created = Created::default();
        match self.install_steps(shaping, ifb, &clock, &mut created) {
            Ok(installed) => Ok(installed),
            Err(e) => {
                self.undo(&created);
                Err(e)
            }
        }
    }

    fn install_steps(
        &mut self,
        shaping: &Shaping,
        ifb: &str,
        clock: &Psched,
        created: &mut Created,
    ) -> Result<Installed, Error> {
        let host = self.link.index;
        if let Some(tbf) = &shaping.ingress {
            self.nl.add_tbf(host, tbf, clock)?;
            created.root_tbf = true;
        }
        let Some(tbf) = &shaping.egress else {
            return Ok(Installed::default());
        };
        let link = self.nl.add_ifb(ifb, self.link.mtu)?;
        created.ifb = Some(link.index);
        self.nl.add_ingress_qdisc(host)?;
        created.ingress_qdisc = true;
        let redirect = Redirect {
            parent: INGRESS,
            priority: 1,
            flow_id: Handle::new(1, 1),
            to: link.index,
        };
        self.nl.add_redirect_filter(host, &redirect)?;
        self.nl.add_tbf(link.index, tbf, clock)?;
        Ok(Installed { ifb: Some(link) })
    }

    /// Best effort: the error being answered is ADD's.
    fn undo(&mut self, created: &Created) {
        if created.ingress_qdisc {
            let _ = self.nl.delete_qdisc(self.link.index, Handle::INGRESS);
        }
        if created.root_tbf {
            let _ = self.nl.delete_qdisc(self.link.index, Handle::ROOT);
        }
        if let Some(index) = created.ifb {
            let _ = self.nl.delete_link(index);
        }
    }

    /// CHECK: each shaped direction's qdiscs as ADD installs them; the
    /// first difference, code 999.
    pub fn check(&mut self, shaping: &Shaping, ifb: &str) -> Result<(), Error> {
        let host = self.link.clone();
        if let Some(tbf) = &shaping.ingress {
            self.check_tbf(&host, tbf, "ingress")?;
        }
        let Some(tbf) = &shaping.egress else {
            return Ok(());
        };
        let ifb = match self.nl.find_link(ifb)? {
            Some(link) if link.kind == Some(LinkKind::Ifb) => link,
            Some(link) => {
                return Err(differs(format!(
                    "egress: {ifb:?} is a {} link, not an ifb",
                    link.kind.as_ref().map_or("kindless", LinkKind::as_str)
                )))
            }
            None => return Err(differs(format!("egress: ifb device {ifb:?} not found"))),
        };
        self.check_tbf(&ifb, tbf, "egress")?;
        let qdiscs = self.nl.qdiscs(host.index)?;
        if !qdiscs
            .iter()
            .any(|q| q.parent == Handle::INGRESS && q.kind == QdiscKind::Ingress)
        {
            return Err(differs(format!(
                "egress: {:?} has no ingress qdisc",
                host.name
            )));
        }
        let filters = self.nl.filters(host.index, INGRESS)?;
        if !filters
            .iter()
            .any(|f| f.matches_all && f.redirects_to.first() == Some(&ifb.index))
        {
            return Err(differs(format!(
                "egress: no filter on {:?} redirects its traffic to {:?}",
                host.name, ifb.name
            )));
        }
        Ok(())
    }

    fn check_tbf(&mut self, link: &Link, tbf: &Tbf, direction: &str) -> Result<(), Error> {
        let qdiscs = self.nl.qdiscs(link.index)?;
        let want = tbf.params();
        let Some(root) = qdiscs.iter().find(|q| q.parent == Handle::ROOT) else {
            return Err(differs(format!(
                "{direction}: failed to find qdisc on {:?}",
                link.name
            )));
        };
        let QdiscKind::Tbf(have) = &root.kind else {
            return Err(differs(format!(
                "{direction}: the root qdisc of {:?} is {:?}, not a tbf",
                link.name, root.kind
            )));
        };
        let mismatch = |what: &str, have: u64, want: u64| {
            differs(format!(
                "{direction}: {what} doesn't match on {:?}: {have}, configured {want}",
                link.name
            ))
        };
        if have.rate != want.rate {
            return Err(mismatch("rate (bytes/s)", have.rate, want.rate));
        }
        if have.limit != want.limit {
            return Err(mismatch(
                "limit (bytes)",
                have.limit.into(),
                want.limit.into(),
            ));
        }
        if have.buffer != want.buffer {
            return Err(mismatch(
                "buffer (ticks)",
                have.buffer.into(),
                want.buffer.into(),
            ));
        }
        Ok(())
    }
}

/// DEL: the ifb `ifb`, and, when the container's veth is still there,
/// its host end's ingress qdisc (when its filter redirects to that ifb,
/// or to a link gone) and tbf. Whatever is gone already is success.
pub(super) fn remove(netns: Option<&Netns>, ifname: &str, ifb: &str) -> Result<(), Error> {
    let mut nl = Netlink::open()?;
    let ifb_link = nl.find_link(ifb)?;
    if let Some(host) = host_end_for_del(&mut nl, netns, ifname)? {
        let ifb_index = ifb_link.as_ref().map(|l| l.index);
        if redirects_to_ifb(&mut nl, host, ifb_index)? {
            nl.delete_qdisc(host, Handle::INGRESS)?;
        }
        let qdiscs = nl.qdiscs(host)?;
        if qdiscs.iter().any(|q| {
            q.parent == Handle::ROOT && q.handle == TBF && matches!(q.kind, QdiscKind::Tbf(_))
        }) {
            nl.delete_qdisc(host, Handle::ROOT)?;
        }
    }
    if let Some(link) = ifb_link {
        match nl.delete_link(link.index) {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

/// Whether a filter on the host end's ingress qdisc redirects all its
/// traffic to the ifb (`ifb`, its index), or to a link that is gone: the
/// ifb of this attachment, removed by an earlier DEL (the reference's
/// removes only the ifb).
fn redirects_to_ifb(nl: &mut Netlink, host: u32, ifb: Option<u32>) -> Result<bool, Error> {
    for filter in nl.filters(host, INGRESS)? {
        let Some(&to) = filter.redirects_to.first() else {
            continue;
        };
        // The kernel reports index 0 once the target is gone.
        let gone = to == 0 || nl.find_link(to)?.is_none();
        if filter.matches_all && (Some(to) == ifb || gone) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The host end's index for DEL, when the namespace, the container's
/// link and its veth peer are all still there.
fn host_end_for_del(
    nl: &mut Netlink,
    netns: Option<&Netns>,
    ifname: &str,
) -> Result<Option<u32>, Error> {
    let Some(netns) = netns else {
        return Ok(None);
    };
    let Some(container) = netns.socket()?.find_link(ifname)? else {
        return Ok(None);
    };
    let Some(peer) = container.veth_peer() else {
        return Ok(None);
    };
    Ok(nl.find_link(peer)?.map(|l| l.index))
}
