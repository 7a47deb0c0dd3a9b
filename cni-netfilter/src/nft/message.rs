//! nf_tables messages (tables, chains, rules, sets) and the batch that
//! carries them to the kernel as one transaction.

use super::compile::ANONYMOUS_SET;
use super::expr::Expr;
use super::nla::Attrs;
use super::udata::comment_udata;
use crate::{Chain, Family, FilterError, Policy, Set, SetKey, Table};

/// `NFNL_SUBSYS_NFTABLES`: the high byte of every nf_tables message type.
const SUBSYS_NFTABLES: u16 = 10;
const NFNL_MSG_BATCH_BEGIN: u16 = 16;
const NFNL_MSG_BATCH_END: u16 = 17;
/// `NFNL_BATCH_GENID`: the batch applies only in this ruleset generation.
const NFNL_BATCH_GENID: u16 = 1;

pub(crate) const NLM_F_REQUEST: u16 = 0x1;
pub(crate) const NLM_F_ACK: u16 = 0x4;
pub(crate) const NLM_F_DUMP: u16 = 0x300;
/// Asks the kernel to send what it did back to the requester.
const NLM_F_ECHO: u16 = 0x8;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const NLM_F_APPEND: u16 = 0x800;
const NFT_SET_ANONYMOUS: u32 = 0x1;
const NFT_SET_CONSTANT: u32 = 0x2;

/// The nf_tables message types used here (`NFT_MSG_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    NewTable = 0,
    GetTable = 1,
    DelTable = 2,
    NewChain = 3,
    GetChain = 4,
    DelChain = 5,
    NewRule = 6,
    GetRule = 7,
    DelRule = 8,
    NewSet = 9,
    NewSetElem = 12,
    DelSetElem = 14,
    GetGen = 16,
}

impl Kind {
    /// The netlink message type: subsystem and message.
    pub(crate) fn message_type(self) -> u16 {
        SUBSYS_NFTABLES << 8 | self as u16
    }
}

/// One nf_tables request: its type, its creation flags and its attributes.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) kind: Kind,
    pub(crate) flags: u16,
    pub(crate) family: Family,
    pub(crate) attrs: Attrs,
}

impl Request {
    fn new(kind: Kind, flags: u16, family: Family) -> Request {
        Request {
            kind,
            flags,
            family,
            attrs: Attrs::default(),
        }
    }
}

/// The `nfgenmsg` header's family byte (`NFPROTO_*`).
pub(crate) fn nfproto(family: Family) -> u8 {
    match family {
        Family::Inet => 1,
        Family::Ip => 2,
        Family::Ip6 => 10,
        Family::Bridge => 7,
    }
}

/// `add table`: creates the table unless it exists.
pub(crate) fn new_table(table: &Table) -> Result<Request, FilterError> {
    let mut req = Request::new(Kind::NewTable, NLM_F_CREATE, table.family);
    req.attrs.str(1, &table.name);
    if let Some(comment) = &table.comment {
        req.attrs.bytes(6, &comment_udata(comment)?);
    }
    Ok(req)
}

/// `delete table`.
pub(crate) fn del_table(table: &Table) -> Request {
    let mut req = Request::new(Kind::DelTable, 0, table.family);
    req.attrs.str(1, &table.name);
    req
}

/// `add chain`: creates the chain unless it exists.
pub(crate) fn new_chain(table: &Table, chain: &Chain) -> Result<Request, FilterError> {
    let mut req = Request::new(Kind::NewChain, NLM_F_CREATE, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(3, &chain.name);
    if let Some(base) = &chain.base {
        req.attrs.nested(4, |hook| {
            hook.u32(1, base.hook.number());
            hook.u32(2, base.priority as u32);
        });
        if let Some(policy) = base.policy {
            req.attrs.u32(5, u32::from(policy == Policy::Accept));
        }
        req.attrs.str(7, base.kind.as_str());
    }
    if let Some(comment) = &chain.comment {
        req.attrs.bytes(12, &comment_udata(comment)?);
    }
    Ok(req)
}

/// `add chain` of a user chain that must not exist yet: the batch fails
/// (`EEXIST`) when another writer made it meanwhile.
pub(crate) fn new_chain_exclusive(table: &Table, chain: &str) -> Request {
    let mut req = Request::new(Kind::NewChain, NLM_F_CREATE | NLM_F_EXCL, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(3, chain);
    req
}

/// `delete chain` (it must be empty by then).
pub(crate) fn del_chain(table: &Table, chain: &str) -> Request {
    let mut req = Request::new(Kind::DelChain, 0, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(3, chain);
    req
}

/// `flush chain`: a rule deletion naming no rule deletes them all.
pub(crate) fn flush_chain(table: &Table, chain: &str) -> Request {
    let mut req = Request::new(Kind::DelRule, 0, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(2, chain);
    req
}

/// `add rule`: appends a rule of these expressions, with its comment.
pub(crate) fn new_rule(
    table: &Table,
    chain: &str,
    exprs: &[Expr],
    comment: Option<&str>,
) -> Result<Request, FilterError> {
    let mut req = Request::new(Kind::NewRule, NLM_F_CREATE | NLM_F_APPEND, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(2, chain);
    req.attrs
        .nested(4, |list| exprs.iter().for_each(|e| e.encode(list)));
    if let Some(comment) = comment {
        req.attrs.bytes(7, &comment_udata(comment)?);
    }
    Ok(req)
}

/// A rule as iptables-nft adds it: appended (`-A`), or at the top of
/// its chain (`-I` without a number); with `NFTA_RULE_COMPAT` (the
/// rule's `-p` protocol, not negated: no rule of ours negates it), which
/// the kernel's xtables layer checks the rule's extensions against (`-m
/// multiport` needs `-p tcp` ..).
pub(crate) fn new_xt_rule(
    table: &Table,
    chain: &str,
    exprs: &[Expr],
    protocol: u32,
    first: bool,
) -> Request {
    let flags = if first {
        NLM_F_CREATE
    } else {
        NLM_F_CREATE | NLM_F_APPEND
    };
    let mut req = Request::new(Kind::NewRule, flags, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(2, chain);
    req.attrs
        .nested(4, |list| exprs.iter().for_each(|e| e.encode(list)));
    req.attrs.nested(5, |c| {
        c.u32(1, protocol);
        // No NFT_RULE_COMPAT_F_INV.
        c.u32(2, 0);
    });
    req
}

/// `delete rule ... handle N`.
pub(crate) fn del_rule(table: &Table, chain: &str, handle: u64) -> Request {
    let mut req = Request::new(Kind::DelRule, 0, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(2, chain);
    req.attrs.u64(3, handle);
    req
}

/// `add set`: creates the named set unless it exists; `id` names it to
/// later lookups of the same batch.
pub(crate) fn new_set(table: &Table, set: &Set, id: u32) -> Request {
    let mut req = Request::new(Kind::NewSet, NLM_F_CREATE, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(2, &set.name);
    req.attrs.u32(3, 0);
    req.attrs.u32(4, set.key.datatype());
    req.attrs.u32(5, set.key.len());
    req.attrs.u32(10, id);
    req
}

/// An anonymous set as nft makes one: constant, named by the kernel,
/// known to the rule of the same batch by `id`.
pub(crate) fn new_anonymous_set(table: &Table, key: SetKey, id: u32, size: u32) -> Request {
    let mut req = Request::new(Kind::NewSet, NLM_F_CREATE, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(2, ANONYMOUS_SET);
    req.attrs.u32(3, NFT_SET_ANONYMOUS | NFT_SET_CONSTANT);
    req.attrs.u32(4, key.datatype());
    req.attrs.u32(5, key.len());
    req.attrs.u32(10, id);
    req.attrs.nested(9, |desc| desc.u32(1, size));
    req
}

/// `add element` / `delete element`; `id` names a set of the same batch.
pub(crate) fn set_elements(
    table: &Table,
    set: &str,
    id: Option<u32>,
    keys: &[Vec<u8>],
    add: bool,
) -> Request {
    let (kind, flags) = if add {
        (Kind::NewSetElem, NLM_F_CREATE)
    } else {
        (Kind::DelSetElem, 0)
    };
    let mut req = Request::new(kind, flags, table.family);
    req.attrs.str(1, &table.name);
    req.attrs.str(2, set);
    if let Some(id) = id {
        req.attrs.u32(4, id);
    }
    req.attrs.nested(3, |list| {
        for key in keys {
            list.nested(1, |elem| elem.nested(1, |k| k.bytes(1, key)));
        }
    });
    req
}

/// A netlink message: header, `nfgenmsg`, attributes.
pub(crate) fn encode(
    out: &mut Vec<u8>,
    message_type: u16,
    flags: u16,
    seq: u32,
    family: u8,
    res_id: u16,
    attrs: &[u8],
) {
    let len = 16 + 4 + attrs.len();
    out.extend_from_slice(&(len as u32).to_ne_bytes());
    out.extend_from_slice(&message_type.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(&[family, 0]);
    out.extend_from_slice(&res_id.to_be_bytes());
    out.extend_from_slice(attrs);
}

/// A batch being built: `BATCH_BEGIN`, the requests, `BATCH_END`. The
/// kernel applies it whole or not at all.
///
/// Only the last request asks for an acknowledgement (`NLM_F_ACK`): the
/// kernel answers every refused request anyway, and queues all its
/// answers, in request order, before the `send` returns. One request
/// acknowledged each would queue one datagram per request, and past the
/// socket's receive buffer (about 200 of them by default) the kernel
/// drops the rest, so a committed batch could look unanswered. With one
/// acknowledgement, answers that overflow the buffer are refusals, and a
/// refused batch changed nothing (`NftSocket::send_batch`).
#[derive(Debug)]
pub(crate) struct Batch {
    pub(crate) bytes: Vec<u8>,
    /// The sequence number of the begin message.
    pub(crate) begin: u32,
    /// Per request after the begin: what it does, for errors.
    pub(crate) described: Vec<(&'static str, String)>,
    /// Where the last request's header starts in `bytes`.
    last: Option<usize>,
    /// Whether each rule added asks the kernel to echo it back once
    /// committed (`NLM_F_ECHO`): the rule as added, with its handle.
    echo_rules: bool,
    /// How many requests ask for an echo.
    pub(crate) echoes: usize,
    /// Whether a request deletes something: once such a batch is
    /// committed, the kernel retires what it removed after an RCU grace
    /// period, which the socket's release waits for.
    pub(crate) deletes: bool,
}

impl Batch {
    /// A batch starting at sequence number `begin`, valid only in
    /// ruleset generation `genid` when given.
    pub(crate) fn new(begin: u32, genid: Option<u32>) -> Batch {
        let mut attrs = Attrs::default();
        if let Some(genid) = genid {
            attrs.u32(NFNL_BATCH_GENID, genid);
        }
        let mut bytes = Vec::new();
        encode(
            &mut bytes,
            NFNL_MSG_BATCH_BEGIN,
            NLM_F_REQUEST,
            begin,
            0,
            SUBSYS_NFTABLES,
            &attrs.buf,
        );
        Batch {
            bytes,
            begin,
            described: Vec::new(),
            last: None,
            echo_rules: false,
            echoes: 0,
            deletes: false,
        }
    }

    /// This batch, each rule it adds from now on echoed back by the kernel
    /// as it commits ([`NftSocket::send_batch_echoed`](super::socket::NftSocket::send_batch_echoed)).
    pub(crate) fn echoing_rules(mut self) -> Batch {
        self.echo_rules = true;
        self
    }

    /// Adds a request, described for errors as `op object`; one with an
    /// attribute too long for netlink is refused.
    pub(crate) fn push(
        &mut self,
        req: Request,
        op: &'static str,
        object: String,
    ) -> Result<(), FilterError> {
        if req.attrs.overflow {
            return Err(FilterError::invalid(
                "request",
                format!("{op} {object}"),
                "has an attribute over 65535 bytes; split it",
            ));
        }
        let seq = self.begin.wrapping_add(self.described.len() as u32 + 1);
        self.last = Some(self.bytes.len());
        let echo = match self.echo_rules && req.kind == Kind::NewRule {
            true => NLM_F_ECHO,
            false => 0,
        };
        self.echoes += usize::from(echo != 0);
        self.deletes |= matches!(
            req.kind,
            Kind::DelTable | Kind::DelChain | Kind::DelRule | Kind::DelSetElem
        );
        encode(
            &mut self.bytes,
            req.kind.message_type(),
            NLM_F_REQUEST | req.flags | echo,
            seq,
            nfproto(req.family),
            0,
            &req.attrs.buf,
        );
        self.described.push((op, object));
        Ok(())
    }

    /// The finished batch; without `BATCH_END` (`commit == false`) the
    /// kernel checks every request, then throws them away (nft `--check`).
    pub(crate) fn finish(mut self, commit: bool) -> Batch {
        if let Some(at) = self.last {
            // The flags follow the length and the type in the header.
            let flags = &mut self.bytes[at + 6..at + 8];
            let acked = u16::from_ne_bytes([flags[0], flags[1]]) | NLM_F_ACK;
            flags.copy_from_slice(&acked.to_ne_bytes());
        }
        if commit {
            let seq = self.begin.wrapping_add(self.described.len() as u32 + 1);
            encode(
                &mut self.bytes,
                NFNL_MSG_BATCH_END,
                NLM_F_REQUEST,
                seq,
                0,
                SUBSYS_NFTABLES,
                &[],
            );
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::socket::split;

    #[test]
    fn only_the_last_request_of_a_batch_asks_for_an_acknowledgement() {
        let table = Table::new(Family::Ip, "t");
        let mut batch = Batch::new(100, Some(7));
        for name in ["a", "b", "c"] {
            let chain = Chain::new(name);
            batch
                .push(new_chain(&table, &chain).unwrap(), "add", name.into())
                .unwrap();
        }
        let batch = batch.finish(true);
        // Each message's sequence number and whether it asks for an ack.
        let mut flags = Vec::new();
        let mut rest = batch.bytes.as_slice();
        while rest.len() >= 16 {
            let word = |at: usize| u32::from_ne_bytes(rest[at..at + 4].try_into().unwrap());
            let ack = u16::from_ne_bytes([rest[6], rest[7]]) & NLM_F_ACK != 0;
            flags.push((word(8), ack));
            rest = &rest[(word(0) as usize).next_multiple_of(4)..];
        }
        assert_eq!(
            flags,
            [
                (100, false),
                (101, false),
                (102, false),
                (103, true),
                (104, false)
            ]
        );
        assert_eq!(split(&batch.bytes).unwrap().len(), 5);
    }

    #[test]
    fn a_batch_that_deletes_anything_says_so_and_one_that_only_adds_does_not() {
        let table = Table::new(Family::Ip, "t");
        let mut adds = Batch::new(1, None);
        adds.push(new_table(&table).unwrap(), "add", "t".into())
            .unwrap();
        adds.push(
            new_chain(&table, &Chain::new("c")).unwrap(),
            "add",
            "c".into(),
        )
        .unwrap();
        assert!(!adds.deletes);
        let mut mixed = Batch::new(1, None);
        mixed
            .push(new_chain_exclusive(&table, "d"), "add", "d".into())
            .unwrap();
        mixed
            .push(del_chain(&table, "c"), "delete", "c".into())
            .unwrap();
        assert!(mixed.deletes);
        let mut table_gone = Batch::new(1, None);
        table_gone
            .push(del_table(&table), "delete", "t".into())
            .unwrap();
        assert!(table_gone.deletes);
    }
}
