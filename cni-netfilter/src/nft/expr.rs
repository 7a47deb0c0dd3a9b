//! nf_tables expressions: the kernel's instructions a rule is made of, and
//! their netlink encoding (attribute order as libnftnl sends it, so our
//! bytes equal nft's).

use super::nla::Attrs;

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
    fn number(self) -> u32 {
        match self {
            Register::Verdict => 0,
            Register::R1 => 1,
            Register::R2 => 2,
        }
    }
}

/// One expression of a rule. Each variant's doc shows how
/// `nft --debug=netlink` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expr {
    /// `[ payload load 4b @ network header + 16 => reg 1 ]`.
    Payload {
        /// Which header.
        base: PayloadBase,
        /// Bytes from its start.
        offset: u32,
        /// Bytes loaded.
        len: u32,
        /// Where to.
        dreg: Register,
    },
    /// `[ meta load l4proto => reg 1 ]`.
    Meta {
        /// What to load.
        key: MetaKey,
        /// Where to.
        dreg: Register,
    },
    /// `[ meta set mark with reg 1 ]`.
    MetaSet {
        /// What to set.
        key: MetaKey,
        /// From where.
        sreg: Register,
    },
    /// `[ cmp eq reg 1 0x00000006 ]`: ends the rule unless it holds.
    Cmp {
        /// The comparison.
        op: CmpOp,
        /// The register compared.
        sreg: Register,
        /// The bytes compared with.
        data: Vec<u8>,
    },
    /// `[ bitwise reg 1 = ( reg 1 & MASK ) ^ XOR ]`.
    Bitwise {
        /// From where.
        sreg: Register,
        /// Where to.
        dreg: Register,
        /// ANDed first; its length is the operation's.
        mask: Vec<u8>,
        /// XORed then; as long as `mask`.
        xor: Vec<u8>,
        /// Whether `NFTA_BITWISE_OP` (boolean) is sent: nft sends it for
        /// an explicit `and`/`or` on a mark, not for a prefix or flags
        /// match; the kernel treats both alike.
        explicit_op: bool,
    },
    /// `[ immediate reg 1 0x0500580a ]`: loads constant data.
    Immediate {
        /// Where to.
        dreg: Register,
        /// The bytes.
        data: Vec<u8>,
    },
    /// `[ immediate reg 0 jump -> CHAIN ]`: sets the verdict.
    Verdict(Verdict),
    /// `[ lookup reg 1 set NAME ]`: ends the rule unless the register's
    /// key is in the set (or is not, when inverted).
    Lookup {
        /// The key's register.
        sreg: Register,
        /// The set's name.
        set: String,
        /// The set's id in this batch, when it was created in it.
        set_id: Option<u32>,
        /// Match keys not in the set.
        invert: bool,
    },
    /// `[ nat dnat ip addr_min reg 1 proto_min reg 2 flags 0x2 ]`.
    Nat {
        /// Source or destination NAT.
        kind: NatKind,
        /// Whether the address is IPv6.
        ipv6: bool,
        /// The register holding the new address.
        addr: Option<Register>,
        /// The register holding the new port.
        proto: Option<Register>,
        /// `NF_NAT_RANGE_*` flags (2: a port is given).
        flags: u32,
    },
    /// `[ masq ]`: source NAT to the outgoing interface's address.
    Masq {
        /// `NF_NAT_RANGE_*` flags (16: fully random ports).
        flags: u32,
    },
    /// `[ fib daddr type => reg 1 ]`: a routing lookup.
    Fib {
        /// `NFTA_FIB_F_*`: what is looked up ([`fib::DADDR`] ..).
        flags: u32,
        /// What is loaded.
        result: FibResult,
        /// Where to.
        dreg: Register,
    },
    /// `[ ct load state => reg 1 ]`: connection tracking data.
    Ct {
        /// What to load.
        key: CtKey,
        /// Where to.
        dreg: Register,
    },
    /// `[ counter pkts 0 bytes 0 ]`.
    Counter,
}

/// Which header a [`Expr::Payload`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadBase {
    /// The link layer header.
    Link,
    /// The network header (IPv4, IPv6).
    Network,
    /// The transport header (TCP, UDP).
    Transport,
}

/// What [`Expr::Meta`] loads or [`Expr::MetaSet`] sets.
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
}

/// The comparison of [`Expr::Cmp`].
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

/// What [`Expr::Fib`] loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FibResult {
    /// `oif`: the output interface's index.
    Oif,
    /// `type`: the address type (`RTN_LOCAL` is 2).
    AddrType,
}

/// What [`Expr::Ct`] loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtKey {
    /// `state`: a bit per state.
    State = 0,
    /// `status`.
    Status = 2,
    /// `mark`.
    Mark = 3,
}

/// The `NFTA_FIB_F_*` flags of [`Expr::Fib`].
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

/// `RTN_LOCAL`: the [`FibResult::AddrType`] of an address of this host.
pub const RTN_LOCAL: u32 = 2;

const NFTA_LIST_ELEM: u16 = 1;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;
const NFTA_DATA_VALUE: u16 = 1;
const NFTA_DATA_VERDICT: u16 = 2;

impl Expr {
    /// The expression's name, as the kernel knows it.
    pub fn name(&self) -> &'static str {
        match self {
            Expr::Payload { .. } => "payload",
            Expr::Meta { .. } | Expr::MetaSet { .. } => "meta",
            Expr::Cmp { .. } => "cmp",
            Expr::Bitwise { .. } => "bitwise",
            Expr::Immediate { .. } | Expr::Verdict(_) => "immediate",
            Expr::Lookup { .. } => "lookup",
            Expr::Nat { .. } => "nat",
            Expr::Masq { .. } => "masq",
            Expr::Fib { .. } => "fib",
            Expr::Ct { .. } => "ct",
            Expr::Counter => "counter",
        }
    }

    /// Appends the expression as one element of `NFTA_RULE_EXPRESSIONS`.
    pub(crate) fn encode(&self, out: &mut Attrs) {
        out.nested(NFTA_LIST_ELEM, |elem| {
            elem.str(NFTA_EXPR_NAME, self.name());
            elem.nested(NFTA_EXPR_DATA, |data| self.encode_data(data));
        });
    }

    fn encode_data(&self, a: &mut Attrs) {
        match self {
            Expr::Payload {
                base,
                offset,
                len,
                dreg,
            } => {
                a.u32(1, dreg.number());
                a.u32(2, *base as u32);
                a.u32(3, *offset);
                a.u32(4, *len);
            }
            Expr::Meta { key, dreg } => {
                a.u32(2, key.number());
                a.u32(1, dreg.number());
            }
            Expr::MetaSet { key, sreg } => {
                a.u32(2, key.number());
                a.u32(3, sreg.number());
            }
            Expr::Cmp { op, sreg, data } => {
                a.u32(1, sreg.number());
                a.u32(2, *op as u32);
                a.nested(3, |d| d.bytes(NFTA_DATA_VALUE, data));
            }
            Expr::Bitwise {
                sreg,
                dreg,
                mask,
                xor,
                explicit_op,
            } => {
                a.u32(1, sreg.number());
                a.u32(2, dreg.number());
                if *explicit_op {
                    a.u32(6, 0);
                }
                a.u32(3, mask.len() as u32);
                a.nested(4, |d| d.bytes(NFTA_DATA_VALUE, mask));
                a.nested(5, |d| d.bytes(NFTA_DATA_VALUE, xor));
            }
            Expr::Immediate { dreg, data } => {
                a.u32(1, dreg.number());
                a.nested(2, |d| d.bytes(NFTA_DATA_VALUE, data));
            }
            Expr::Verdict(verdict) => {
                a.u32(1, Register::Verdict.number());
                a.nested(2, |d| {
                    d.nested(NFTA_DATA_VERDICT, |v| {
                        v.u32(1, verdict.code() as u32);
                        if let Verdict::Jump(chain) | Verdict::Goto(chain) = verdict {
                            v.str(2, chain);
                        }
                    })
                });
            }
            Expr::Lookup {
                sreg,
                set,
                set_id,
                invert,
            } => {
                a.u32(2, sreg.number());
                a.str(1, set);
                if let Some(id) = set_id {
                    a.u32(4, *id);
                }
                if *invert {
                    a.u32(5, 1);
                }
            }
            Expr::Nat {
                kind,
                ipv6,
                addr,
                proto,
                flags,
            } => {
                a.u32(1, *kind as u32);
                a.u32(2, if *ipv6 { 10 } else { 2 });
                if let Some(reg) = addr {
                    a.u32(3, reg.number());
                }
                if let Some(reg) = proto {
                    a.u32(5, reg.number());
                }
                if *flags != 0 {
                    a.u32(7, *flags);
                }
            }
            Expr::Masq { flags } => {
                if *flags != 0 {
                    a.u32(1, *flags);
                }
            }
            Expr::Fib {
                flags,
                result,
                dreg,
            } => {
                a.u32(3, *flags);
                a.u32(2, result.kernel());
                a.u32(1, dreg.number());
            }
            Expr::Ct { key, dreg } => {
                a.u32(2, *key as u32);
                a.u32(1, dreg.number());
            }
            Expr::Counter => {}
        }
    }
}

impl MetaKey {
    fn number(self) -> u32 {
        match self {
            MetaKey::Mark => 3,
            MetaKey::Iif => 4,
            MetaKey::Oif => 5,
            MetaKey::Iifname => 6,
            MetaKey::Oifname => 7,
            MetaKey::Nfproto => 15,
            MetaKey::L4proto => 16,
        }
    }
}

impl Verdict {
    /// The kernel's verdict code (`NF_ACCEPT`, `NFT_JUMP` ..).
    fn code(&self) -> i32 {
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
    fn kernel(self) -> u32 {
        match self {
            FibResult::Oif => 1,
            FibResult::AddrType => 3,
        }
    }
}
