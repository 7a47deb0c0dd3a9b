//! The operands of nf_tables expressions: registers, header bases, meta
//! and ct keys, comparisons, verdicts, with the kernel's numbers.

/// A register: the verdict register or one of the 16-byte data
/// registers, numbered as nft 1.0 uses them (`NFT_REG_1` ..).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Register {
    /// `NFT_REG_VERDICT` (0).
    Verdict,
    /// `NFT_REG_1` (1).
    R1,
    /// `NFT_REG_2` (2).
    R2,
}

impl Register {
    pub(super) fn number(self) -> u32 {
        match self {
            Register::Verdict => 0,
            Register::R1 => 1,
            Register::R2 => 2,
        }
    }
}

/// Which header a [`Expr::Payload`](super::Expr::Payload) reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadBase {
    /// The link layer header.
    Link,
    /// The network header (IPv4, IPv6).
    Network,
    /// The transport header (TCP, UDP).
    Transport,
}

/// What [`Expr::Meta`](super::Expr::Meta) loads or [`Expr::MetaSet`](super::Expr::MetaSet) sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaKey {
    /// `mark` (3).
    Mark,
    /// `iif` (4): input interface index.
    Iif,
    /// `oif` (5): output interface index.
    Oif,
    /// `iifname` (6).
    Iifname,
    /// `oifname` (7).
    Oifname,
    /// `nfproto` (15): the packet's family, in an inet table.
    Nfproto,
    /// `l4proto` (16): the transport protocol.
    L4proto,
    /// `pkttype` (19): unicast to a host, broadcast, multicast, or to
    /// another host (`PACKET_HOST` ..).
    Pkttype,
}

/// The comparison of [`Expr::Cmp`](super::Expr::Cmp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `eq`.
    Eq,
    /// `neq`.
    Neq,
    /// `lt`.
    Lt,
    /// `lte`.
    Lte,
    /// `gt`.
    Gt,
    /// `gte`.
    Gte,
}

/// A verdict: what happens to the packet next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `accept`.
    Accept,
    /// `drop`.
    Drop,
    /// `return`.
    Return,
    /// `jump -> CHAIN`.
    Jump(String),
    /// `goto -> CHAIN`.
    Goto(String),
}

/// Source or destination NAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NatKind {
    /// `snat`.
    Snat,
    /// `dnat`.
    Dnat,
}

/// What [`Expr::Fib`](super::Expr::Fib) loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FibResult {
    /// `oif`: the output interface's index.
    Oif,
    /// `type`: the address type (`RTN_LOCAL` is 2).
    AddrType,
}

/// What [`Expr::Ct`](super::Expr::Ct) loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtKey {
    /// `state`: a bit per state.
    State = 0,
    /// `status`.
    Status = 2,
    /// `mark`.
    Mark = 3,
}

/// The `NFTA_FIB_F_*` flags of [`Expr::Fib`](super::Expr::Fib).
pub mod fib {
    /// Look up the source address.
    pub const SADDR: u32 = 1;
    /// Look up the destination address.
    pub const DADDR: u32 = 2;
    /// Take the packet mark into account.
    pub const MARK: u32 = 4;
    /// Take the input interface into account.
    pub const IIF: u32 = 8;
    /// Take the output interface into account.
    pub const OIF: u32 = 16;
}

/// `PACKET_HOST`: the [`MetaKey::Pkttype`] of a packet addressed to one
/// host.
pub const PACKET_HOST: u8 = 0;

/// `RTN_LOCAL`: the [`FibResult::AddrType`] of an address of this host.
pub const RTN_LOCAL: u32 = 2;

impl MetaKey {
    pub(super) fn number(self) -> u32 {
        match self {
            MetaKey::Mark => 3,
            MetaKey::Iif => 4,
            MetaKey::Oif => 5,
            MetaKey::Iifname => 6,
            MetaKey::Oifname => 7,
            MetaKey::Nfproto => 15,
            MetaKey::L4proto => 16,
            MetaKey::Pkttype => 19,
        }
    }
}

impl Verdict {
    /// The kernel's verdict code (`NF_ACCEPT`, `NFT_JUMP` ..).
    pub(super) fn code(&self) -> i32 {
        match self {
            Verdict::Drop => 0,
            Verdict::Accept => 1,
            Verdict::Jump(_) => -3,
            Verdict::Goto(_) => -4,
            Verdict::Return => -5,
        }
    }
}

// The discriminants above are the kernel's numbers.
const _: () = {
    assert!(PayloadBase::Transport as u32 == 2);
    assert!(CmpOp::Gte as u32 == 5);
    assert!(NatKind::Dnat as u32 == 1);
    assert!(CtKey::Mark as u32 == 3);
};

impl FibResult {
    pub(super) fn kernel(self) -> u32 {
        match self {
            FibResult::Oif => 1,
            FibResult::AddrType => 3,
        }
    }
}
