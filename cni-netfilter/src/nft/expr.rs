//! nf_tables expressions: the kernel's instructions a rule is made of, and
//! their netlink encoding (attribute order as libnftnl sends it, so our
//! bytes equal nft's).

use cni_types::IpFamily;

use super::keys::{CmpOp, CtKey, FibResult, MetaKey, NatKind, PayloadBase, Register, Verdict};
use super::message::nfproto;
use super::nla::Attrs;
use crate::Family;

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
        /// The address's family.
        family: IpFamily,
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
        /// `NFTA_FIB_F_*`: what is looked up ([`fib::DADDR`](super::fib::DADDR) ..).
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
    /// `[ match name comment rev 0 ]`: an xtables match run by the
    /// kernel's compatibility layer, as iptables-nft writes the matches
    /// nf_tables has no native form for.
    XtMatch {
        /// The extension's name (`comment`, `multiport`..).
        name: &'static str,
        /// Its revision.
        rev: u32,
        /// Its `xt_*_info` structure, in the host's byte order, padded to
        /// 8 bytes (`XT_ALIGN`) as iptables passes it.
        info: Vec<u8>,
    },
    /// `[ target name DNAT rev 2 ]`: an xtables target, as
    /// [`Expr::XtMatch`].
    XtTarget {
        /// The extension's name (`DNAT`, `MASQUERADE`, `MARK`..).
        name: &'static str,
        /// Its revision.
        rev: u32,
        /// Its structure, as for a match.
        info: Vec<u8>,
    },
}

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
            Expr::XtMatch { .. } => "match",
            Expr::XtTarget { .. } => "target",
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
                family,
                addr,
                proto,
                flags,
            } => {
                a.u32(1, *kind as u32);
                a.u32(2, nfproto(Family::of(*family)).into());
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
            Expr::XtMatch { name, rev, info } | Expr::XtTarget { name, rev, info } => {
                a.str(1, name);
                a.u32(2, *rev);
                a.bytes(3, info);
            }
        }
    }
}

/// Whether a rule's expressions, as the kernel lists them, jump or go to
/// `chain`: an `immediate` expression setting the verdict register to
/// `NFT_JUMP` or `NFT_GOTO` with that chain. iptables-nft writes `-j
/// CHAIN` and `-g CHAIN` of a user chain so, as nft does `jump` and
/// `goto`. A malformed listing is an error, not a guess.
pub(crate) fn jumps_to(exprs: &[u8], chain: &str) -> Result<bool, crate::FilterError> {
    use super::nla;
    let wanted = [
        Verdict::Jump(String::new()).code(),
        Verdict::Goto(String::new()).code(),
    ];
    for (kind, element) in nla::parse(exprs)? {
        if kind != NFTA_LIST_ELEM {
            continue;
        }
        let [name, data] = nla::find(element, [NFTA_EXPR_NAME, NFTA_EXPR_DATA])?;
        if name.map(nla::text) != Some(b"immediate".as_slice()) {
            continue;
        }
        let [dreg, value] = nla::find(data.unwrap_or_default(), [1, 2])?;
        if dreg.map(nla::number).transpose()? != Some(Register::Verdict.number().into()) {
            continue;
        }
        let [verdict] = nla::find(value.unwrap_or_default(), [NFTA_DATA_VERDICT])?;
        let [code, target] = nla::find(verdict.unwrap_or_default(), [1, 2])?;
        let code = code.map(nla::number).transpose()?.map(|c| c as u32 as i32);
        if code.is_some_and(|c| wanted.contains(&c))
            && target.map(nla::text) == Some(chain.as_bytes())
        {
            return Ok(true);
        }
    }
    Ok(false)
}
