//! Qdiscs: add or replace a tbf, add an ingress qdisc, delete one, list
//! a link's, like `tc qdisc`.

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage, TcOption};
use netlink_packet_route::RouteNetlinkMessage;

use super::{Handle, Psched, Tbf, TbfParams};
use crate::{NetError, Netlink, Op};

/// A qdisc as the kernel reports it.
///
/// Go: `netlink.Qdisc`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Qdisc {
    /// The link's index.
    pub index: u32,
    /// Its handle (`1:`, `ffff:`; `0:` for a link's default qdisc).
    pub handle: Handle,
    /// Its parent: [`Handle::ROOT`], [`Handle::INGRESS`] or a class.
    pub parent: Handle,
    /// What it is, with the options of the kinds this crate creates.
    pub kind: QdiscKind,
}

/// A qdisc's kind (`TCA_KIND`), with its options when this crate knows
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum QdiscKind {
    /// A token bucket filter.
    Tbf(TbfParams),
    /// The ingress qdisc, where filters see what a link receives.
    Ingress,
    /// Any other kind, by name (`noqueue`, `fq_codel`, ...), or a tbf
    /// whose options could not be read.
    Other(String),
}

impl Netlink {
    /// Makes `tbf` the root qdisc of link `index`, with handle `1:`; the
    /// kernel's `EEXIST` when the link already has a root qdisc of its
    /// own. `clock` converts the bucket to ticks for the kernel's
    /// parameters (see [`Tbf`]).
    ///
    /// Like `tc qdisc add dev LINK root handle 1: tbf rate RATE burst BURST
    /// limit LIMIT`; Go: `netlink.QdiscAdd(&netlink.Tbf{..})`.
    pub fn add_tbf(&mut self, index: u32, tbf: &Tbf, clock: &Psched) -> Result<(), NetError> {
        self.root_tbf(index, tbf, clock, NLM_F_CREATE | NLM_F_EXCL)
    }

    /// Makes `tbf` the root qdisc of link `index`, with handle `1:`,
    /// whatever root qdisc the link had: the tbf's parameters change when
    /// it is a tbf `1:` already, else the new tbf replaces the old qdisc.
    /// Unlike [`Netlink::add_tbf`], which the kernel refuses with `EEXIST`
    /// when the link has a root qdisc of its own, it can be run again with
    /// the same or new parameters.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use cni_net::tc::{Handle, Psched, QdiscKind, Tbf};
    ///
    /// let mut nl = cni_net::Netlink::open()?;
    /// let link = nl.link("eth0")?;
    /// let clock = Psched::read()?;
    /// // egressRate 1 Mbit/s, egressBurst 80 kbit, as a configuration says them.
    /// let tbf = Tbf::from_bits(1_000_000, 80_000, Duration::from_millis(25))?;
    /// nl.replace_root_tbf(link.index, &tbf, &clock)?;
    /// nl.replace_root_tbf(link.index, &tbf, &clock)?; // no EEXIST
    /// let root = nl.qdiscs(link.index)?.into_iter().find(|q| q.parent == Handle::ROOT);
    /// assert_eq!(root.map(|q| q.kind), Some(QdiscKind::Tbf(tbf.params())));
    /// assert!(nl.delete_root_qdisc(link.index)?);
    /// # Ok::<(), cni_net::NetError>(())
    /// ```
    ///
    /// Like `tc qdisc replace dev LINK root handle 1: tbf rate RATE burst
    /// BURST limit LIMIT`; Go: `netlink.QdiscReplace(&netlink.Tbf{..})`.
    pub fn replace_root_tbf(
        &mut self,
        index: u32,
        tbf: &Tbf,
        clock: &Psched,
    ) -> Result<(), NetError> {
        self.root_tbf(index, tbf, clock, NLM_F_CREATE | NLM_F_REPLACE)
    }

    /// Deletes the root qdisc of link `index` with its classes and
    /// filters, so the link goes back to its default qdisc; whether it had
    /// one of its own (the default counts as none). For DEL, where
    /// "already gone" is success. The example is
    /// [`Netlink::replace_root_tbf`]'s.
    ///
    /// Like `tc qdisc del dev LINK root`; Go:
    /// `netlink.QdiscDel` of the link's root qdisc.
    pub fn delete_root_qdisc(&mut self, index: u32) -> Result<bool, NetError> {
        self.delete_qdisc(index, Handle::ROOT)
    }

    /// `tbf` as the root qdisc `1:` of link `index`, with the request's
    /// `flags` (create only, or create or replace).
    fn root_tbf(
        &mut self,
        index: u32,
        tbf: &Tbf,
        clock: &Psched,
        flags: u16,
    ) -> Result<(), NetError> {
        let options = tbf
            .options(clock)
            .into_iter()
            .map(TcOption::Other)
            .collect();
        let msg = qdisc_message(
            index,
            Handle::new(1, 0),
            Handle::ROOT,
            vec![
                TcAttribute::Kind("tbf".into()),
                TcAttribute::Options(options),
            ],
        );
        let object = format!("tbf to {}", self.label(index));
        self.change(RouteNetlinkMessage::NewQueueDiscipline(msg), flags)
            .map_err(NetError::kernel(Op::AddQdisc, object))
    }

    /// Adds the ingress qdisc (handle `ffff:`) to link `index`, where
    /// filters then see what the link receives.
    ///
    /// Like `tc qdisc add dev LINK handle ffff: ingress`; Go:
    /// `netlink.QdiscAdd(&netlink.Ingress{..})`.
    pub fn add_ingress_qdisc(&mut self, index: u32) -> Result<(), NetError> {
        let msg = qdisc_message(
            index,
            Handle::new(0xffff, 0),
            Handle::INGRESS,
            vec![TcAttribute::Kind("ingress".into())],
        );
        let object = format!("ingress to {}", self.label(index));
        self.change(
            RouteNetlinkMessage::NewQueueDiscipline(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(NetError::kernel(Op::AddQdisc, object))
    }

    /// Deletes the qdisc of link `index` under `parent` ([`Handle::ROOT`]
    /// or [`Handle::INGRESS`]), with its filters; whether there was one
    /// (the link's default root qdisc cannot be deleted and counts as
    /// none). For DEL, where "already gone" is success.
    ///
    /// Like `tc qdisc del dev LINK root` and `tc qdisc del dev LINK
    /// ingress`; Go: `netlink.QdiscDel`.
    pub fn delete_qdisc(&mut self, index: u32, parent: Handle) -> Result<bool, NetError> {
        let msg = qdisc_message(index, Handle(0), parent, Vec::new());
        match self.change(RouteNetlinkMessage::DelQueueDiscipline(msg), 0) {
            Ok(()) => Ok(true),
            Err(e) => {
                let err = NetError::kernel(
                    Op::DeleteQdisc,
                    format!("{parent} qdisc of {}", self.label(index)),
                )(e);
                if err.is_not_found() {
                    Ok(false)
                } else {
                    Err(err)
                }
            }
        }
    }

    /// The qdiscs of link `index`.
    ///
    /// Like `tc qdisc show dev LINK`; Go: `netlink.QdiscList`.
    pub fn qdiscs(&mut self, index: u32) -> Result<Vec<Qdisc>, NetError> {
        let query = RouteNetlinkMessage::GetQueueDiscipline(TcMessage::with_index(index as i32));
        let replies = self.dump_tc(query, format!("qdiscs of link #{index}"))?;
        Ok(replies
            .iter()
            .filter_map(qdisc_of)
            .filter(|q| q.index == index)
            .collect())
    }
}

fn qdisc_message(
    index: u32,
    handle: Handle,
    parent: Handle,
    attributes: Vec<TcAttribute>,
) -> TcMessage {
    let mut msg = TcMessage::with_index(index as i32);
    msg.header.handle = TcHandle::from(handle.0);
    msg.header.parent = TcHandle::from(parent.0);
    msg.attributes = attributes;
    msg
}

fn qdisc_of(msg: &TcMessage) -> Option<Qdisc> {
    let kind = msg.attributes.iter().find_map(|a| match a {
        TcAttribute::Kind(k) => Some(k.as_str()),
        _ => None,
    })?;
    let kind = match kind {
        "ingress" => QdiscKind::Ingress,
        "tbf" => msg
            .attributes
            .iter()
            .find_map(|a| match a {
                TcAttribute::Options(options) => options.iter().find_map(|o| match o {
                    TcOption::Other(nla) => TbfParams::parse(nla),
                    _ => None,
                }),
                _ => None,
            })
            .map_or_else(|| QdiscKind::Other("tbf".into()), QdiscKind::Tbf),
        other => QdiscKind::Other(other.to_owned()),
    };
    Some(Qdisc {
        index: u32::try_from(msg.header.index).ok()?,
        handle: Handle(msg.header.handle.into()),
        parent: Handle(msg.header.parent.into()),
        kind,
    })
}
