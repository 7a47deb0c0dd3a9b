//! A [`Rule`] as the nf_tables expressions iptables-nft (1.8) makes of
//! the `iptables-restore` line [`render`](super::render) writes for it:
//! the same expressions in the same order, so a rule added through
//! nf_tables directly is the rule `iptables-save` prints, `iptables -D`
//! finds and the reference's `iptables -C` checks.
//!
//! iptables-nft writes interfaces, `-p`, addresses, `-m tcp`/`-m udp`
//! ports, `-m mark` and standard targets as native expressions, and runs
//! the other extensions through the kernel's xtables compatibility layer
//! (`match`/`target` expressions carrying the extension's structure).
//! What this module does not know how iptables-nft writes (SCTP ports,
//! SNAT, more than 15 ports in one multiport) has no form here: callers
//! then run `iptables-restore`.
//!
//! Go: none (the reference runs `iptables`); C: iptables
//! `nft-ipv4.c`/`nft-ipv6.c` (`nft_ipv4_add`), `nft-shared.c` and
//! `nft.c` (`add_match`, `add_nft_tcpudp`, `add_nft_mark`, `add_addr`).

use std::net::IpAddr;

use cni_types::{IpFamily, IpNetwork};

use crate::nft::{CmpOp, Expr, MetaKey, PayloadBase, Register, Verdict};
use crate::{Action, CtState, Family, Match, Protocol, Rule};

/// `XT_MAX_COMMENT_LEN`: the comment match's buffer.
const COMMENT_BUFFER: usize = 256;
/// `XT_MULTI_PORTS`: the ports one multiport match holds.
const MULTI_PORTS: usize = 15;

/// A rule as iptables-nft adds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct XtRule {
    /// Its expressions, counter included.
    pub(crate) exprs: Vec<Expr>,
    /// `NFTA_RULE_COMPAT`: its `-p` protocol (0 for none; a
    /// [`Match::Protocol`] is never negated).
    pub(crate) protocol: u32,
}

/// The rule as iptables-nft writes it in `family` (`ip` or `ip6`), or
/// `None` when a part of it has no form here.
pub(crate) fn xt_rule(rule: &Rule, family: Family) -> Option<XtRule> {
    let ip = match family {
        Family::Ip => IpFamily::V4,
        Family::Ip6 => IpFamily::V6,
        _ => return None,
    };
    // iptables-nft's fixed order for the rule's own fields: `-i`, `-o`,
    // `-p`, `-s`, `-d`; then the extensions in the line's order (the
    // comment first, as `render` writes it), the counter, the target.
    let mut exprs = Vec::new();
    let mut protocol = None;
    for m in &rule.matches {
        if let Match::Protocol(p) = m {
            protocol = Some(*p);
        }
    }
    let interface = |key, name: &str, negate: bool| {
        let mut data = name.as_bytes().to_vec();
        data.push(0);
        [
            Expr::Meta {
                key,
                dreg: Register::R1,
            },
            cmp(negate, data),
        ]
    };
    for m in &rule.matches {
        if let Match::InInterface { name, negate } = m {
            exprs.extend(interface(MetaKey::Iifname, name, *negate));
        }
    }
    for m in &rule.matches {
        if let Match::OutInterface { name, negate } = m {
            exprs.extend(interface(MetaKey::Oifname, name, *negate));
        }
    }
    if let Some(p) = protocol {
        exprs.push(Expr::Meta {
            key: MetaKey::L4proto,
            dreg: Register::R1,
        });
        exprs.push(cmp(false, vec![p.number()]));
    }
    for source in [true, false] {
        for m in &rule.matches {
            match m {
                Match::Source { net, negate } if source => {
                    address(&mut exprs, net, *negate, ip, true)?
                }
                Match::Destination { net, negate } if !source => {
                    address(&mut exprs, net, *negate, ip, false)?
                }
                _ => {}
            }
        }
    }
    if let Some(comment) = &rule.comment {
        let bytes = comment.as_bytes();
        if bytes.len() >= COMMENT_BUFFER || bytes.contains(&0) {
            return None;
        }
        let mut info = bytes.to_vec();
        info.resize(COMMENT_BUFFER, 0);
        exprs.push(Expr::XtMatch {
            name: "comment",
            rev: 0,
            info,
        });
    }
    for m in &rule.matches {
        match m {
            Match::Source { .. }
            | Match::Destination { .. }
            | Match::Protocol(_)
            | Match::InInterface { .. }
            | Match::OutInterface { .. } => {}
            Match::SourcePort(port) | Match::DestinationPort(port) => {
                if !matches!(protocol, Some(Protocol::Tcp | Protocol::Udp)) {
                    return None;
                }
                let offset = if matches!(m, Match::SourcePort(_)) {
                    0
                } else {
                    2
                };
                exprs.push(Expr::Payload {
                    base: PayloadBase::Transport,
                    offset,
                    len: 2,
                    dreg: Register::R1,
                });
                exprs.push(cmp(false, port.to_be_bytes().to_vec()));
            }
            Match::DestinationPorts(ports) => {
                if ports.is_empty() || ports.len() > MULTI_PORTS {
                    return None;
                }
                // struct xt_multiport_v1: flags (XT_MULTIPORT_DESTINATION),
                // count, ports[15], pflags[15], invert.
                let mut info = vec![1, ports.len() as u8];
                for i in 0..MULTI_PORTS {
                    info.extend(ports.get(i).copied().unwrap_or(0).to_ne_bytes());
                }
                info.resize(info.len() + MULTI_PORTS + 1, 0);
                exprs.push(Expr::XtMatch {
                    name: "multiport",
                    rev: 1,
                    info,
                });
            }
            Match::LocalDestination => {
                // struct xt_addrtype_info_v1: source, dest
                // (XT_ADDRTYPE_LOCAL), flags.
                let mut info = Vec::with_capacity(8);
                info.extend(0u16.to_ne_bytes());
                info.extend(4u16.to_ne_bytes());
                info.extend(0u32.to_ne_bytes());
                exprs.push(Expr::XtMatch {
                    name: "addrtype",
                    rev: 1,
                    info,
                });
            }
            Match::Unicast => {
                // struct xt_pkttype_info: pkttype (PACKET_HOST), invert.
                let mut info = Vec::with_capacity(8);
                info.extend(0i32.to_ne_bytes());
                info.extend(0i32.to_ne_bytes());
                exprs.push(Expr::XtMatch {
                    name: "pkttype",
                    rev: 0,
                    info,
                });
            }
            Match::Mark { value, mask } => {
                exprs.push(Expr::Meta {
                    key: MetaKey::Mark,
                    dreg: Register::R1,
                });
                if *mask != u32::MAX {
                    exprs.push(Expr::Bitwise {
                        sreg: Register::R1,
                        dreg: Register::R1,
                        mask: mask.to_ne_bytes().to_vec(),
                        xor: vec![0; 4],
                        explicit_op: false,
                    });
                }
                exprs.push(cmp(false, value.to_ne_bytes().to_vec()));
            }
            Match::CtState(states) => exprs.push(conntrack(states)?),
            _ => return None,
        }
    }
    exprs.push(Expr::Counter);
    exprs.push(target(rule.action.as_ref(), ip)?);
    let protocol = protocol.map_or(0, |p| u32::from(p.number()));
    Some(XtRule { exprs, protocol })
}

fn cmp(negate: bool, data: Vec<u8>) -> Expr {
    Expr::Cmp {
        op: if negate { CmpOp::Neq } else { CmpOp::Eq },
        sreg: Register::R1,
        data,
    }
}

/// `-s`/`-d`: the whole bytes of the prefix loaded and compared; a
/// prefix that ends inside a byte loads the whole address and masks it.
fn address(
    exprs: &mut Vec<Expr>,
    net: &IpNetwork,
    negate: bool,
    ip: IpFamily,
    source: bool,
) -> Option<()> {
    if net.family() != ip {
        return None;
    }
    let prefix = usize::from(net.prefix());
    if prefix == 0 {
        // iptables leaves `-s 0.0.0.0/0` out; negated it matches nothing.
        return (!negate).then_some(());
    }
    // saddr and daddr in struct iphdr and struct ipv6hdr.
    let (offset, bytes): (u32, Vec<u8>) = match (net.network(), source) {
        (IpAddr::V4(a), true) => (12, a.octets().to_vec()),
        (IpAddr::V4(a), false) => (16, a.octets().to_vec()),
        (IpAddr::V6(a), true) => (8, a.octets().to_vec()),
        (IpAddr::V6(a), false) => (24, a.octets().to_vec()),
    };
    let full = bytes.len();
    let mut mask = vec![0u8; full];
    for (i, byte) in mask.iter_mut().enumerate() {
        let bits = prefix.saturating_sub(i * 8).min(8);
        *byte = (0xffu16 << (8 - bits)) as u8;
    }
    if prefix % 8 == 0 {
        let len = prefix / 8;
        exprs.push(Expr::Payload {
            base: PayloadBase::Network,
            offset,
            len: len as u32,
            dreg: Register::R1,
        });
        exprs.push(cmp(negate, bytes[..len].to_vec()));
    } else {
        exprs.push(Expr::Payload {
            base: PayloadBase::Network,
            offset,
            len: full as u32,
            dreg: Register::R1,
        });
        exprs.push(Expr::Bitwise {
            sreg: Register::R1,
            dreg: Register::R1,
            mask,
            xor: vec![0; full],
            explicit_op: false,
        });
        exprs.push(cmp(negate, bytes));
    }
    Some(())
}

/// `-m conntrack --ctstate S,..`: struct xt_conntrack_mtinfo3 (162 bytes
/// and padding) with only `match_flags` (`XT_CONNTRACK_STATE`) and
/// `state_mask` set.
fn conntrack(states: &[CtState]) -> Option<Expr> {
    if states.is_empty() {
        return None;
    }
    // XT_CONNTRACK_STATE_BIT: 1 << (IP_CT_* + 1); INVALID is bit 0.
    let mask = states.iter().fold(0u16, |mask, state| {
        mask | match state {
            CtState::Invalid => 1,
            CtState::Established => 1 << 1,
            CtState::Related => 1 << 2,
            CtState::New => 1 << 3,
        }
    });
    let mut info = vec![0u8; 168];
    info[146..148].copy_from_slice(&1u16.to_ne_bytes());
    info[150..152].copy_from_slice(&mask.to_ne_bytes());
    Some(Expr::XtMatch {
        name: "conntrack",
        rev: 3,
        info,
    })
}

/// `-j`/`-g`: a verdict for the standard targets and user chains, an
/// xtables target for the others.
fn target(action: Option<&Action>, ip: IpFamily) -> Option<Expr> {
    Some(match action? {
        Action::Accept => Expr::Verdict(Verdict::Accept),
        Action::Drop => Expr::Verdict(Verdict::Drop),
        Action::Return => Expr::Verdict(Verdict::Return),
        Action::Jump(chain) => Expr::Verdict(Verdict::Jump(chain.clone())),
        Action::Goto(chain) => Expr::Verdict(Verdict::Goto(chain.clone())),
        Action::Dnat { addr, port } => {
            let addr = addr.to_canonical();
            if IpFamily::of(addr) != ip {
                return None;
            }
            // struct nf_nat_range2: flags (NF_NAT_RANGE_MAP_IPS, and
            // NF_NAT_RANGE_PROTO_SPECIFIED with a port), min_addr,
            // max_addr, min_proto, max_proto, base_proto; padded to 48.
            let flags: u32 = if port.is_some() { 3 } else { 1 };
            let mut address = [0u8; 16];
            match addr {
                IpAddr::V4(a) => address[..4].copy_from_slice(&a.octets()),
                IpAddr::V6(a) => address.copy_from_slice(&a.octets()),
            }
            let port = port.unwrap_or(0).to_be_bytes();
            let mut info = flags.to_ne_bytes().to_vec();
            info.extend(address);
            info.extend(address);
            info.extend(port);
            info.extend(port);
            info.resize(48, 0);
            Expr::XtTarget {
                name: "DNAT",
                rev: 2,
                info,
            }
        }
        Action::Masquerade => {
            // IPv4: struct nf_nat_ipv4_multi_range_compat with rangesize
            // 1 (24 bytes); IPv6: struct nf_nat_range, all zeros (40).
            let info = match ip {
                IpFamily::V4 => {
                    let mut info = 1u32.to_ne_bytes().to_vec();
                    info.resize(24, 0);
                    info
                }
                IpFamily::V6 => vec![0; 40],
            };
            Expr::XtTarget {
                name: "MASQUERADE",
                rev: 0,
                info,
            }
        }
        Action::SetMark { value, mask } => {
            // struct xt_mark_tginfo2 of `--set-xmark VALUE/MASK`.
            let mut info = value.to_ne_bytes().to_vec();
            info.extend(mask.to_ne_bytes());
            Expr::XtTarget {
                name: "MARK",
                rev: 2,
                info,
            }
        }
        Action::Snat { .. } => return None,
    })
}

/// The address bytes of the rule's first host match (`-s`/`-d` of a
/// single address, not negated): no rule of a chain holds the rule when
/// no rule of the chain holds those bytes, whatever the encoding.
pub(crate) fn host_address(rule: &Rule) -> Option<Vec<u8>> {
    rule.matches.iter().find_map(|m| match m {
        Match::Source { net, negate: false } | Match::Destination { net, negate: false }
            if net.prefix()
                == if net.family() == IpFamily::V4 {
                    32
                } else {
                    128
                } =>
        {
            Some(match net.addr() {
                IpAddr::V4(a) => a.octets().to_vec(),
                IpAddr::V6(a) => a.octets().to_vec(),
            })
        }
        _ => None,
    })
}
