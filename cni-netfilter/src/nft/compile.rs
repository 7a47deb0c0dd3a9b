//! A [`Rule`] as nf_tables expressions, exactly as nft 1.0 linearizes the
//! same rule text (src/nft/tests.rs holds nft's own bytes for each kind).

use std::net::IpAddr;

use cni_types::{IpFamily, IpNetwork};

use super::expr::Expr;
use super::keys::{
    fib, CmpOp, CtKey, FibResult, MetaKey, NatKind, PayloadBase, Register, Verdict, PACKET_HOST,
    RTN_LOCAL,
};
use super::message::nfproto;
use crate::rule::validate_ifname;
use crate::{Action, Family, FilterError, Match, Protocol, Rule, SetKey};

/// A rule's expressions, and the anonymous sets its lookups need (nft's
/// `tcp dport { 80, 443 }`), to be created in the same batch before it.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) exprs: Vec<Expr>,
    pub(crate) sets: Vec<AnonymousSet>,
}

/// An anonymous set: constant, bound to the one rule that looks it up.
#[derive(Debug)]
pub(crate) struct AnonymousSet {
    /// The index of its lookup in the rule's expressions.
    pub(crate) lookup: usize,
    pub(crate) key: SetKey,
    pub(crate) elements: Vec<Vec<u8>>,
}

/// The name nft gives every anonymous set; the kernel numbers it.
pub(crate) const ANONYMOUS_SET: &str = "__set%d";

/// The expressions of `rule` in a table of `family`, or why it cannot be
/// one (an IPv6 address in an `ip` table, a port without a protocol).
pub(crate) fn compile(rule: &Rule, family: Family) -> Result<Compiled, FilterError> {
    let mut c = Compiler {
        family,
        out: Vec::new(),
        sets: Vec::new(),
        nfproto: None,
        l4: None,
    };
    for condition in &rule.matches {
        c.condition(condition)?;
    }
    if rule.counter {
        c.out.push(Expr::Counter);
    }
    if let Some(action) = &rule.action {
        c.action(action)?;
    }
    Ok(Compiled {
        exprs: c.out,
        sets: c.sets,
    })
}

struct Compiler {
    family: Family,
    out: Vec<Expr>,
    sets: Vec<AnonymousSet>,
    /// The IP family already checked (`meta nfproto`), in an inet table.
    nfproto: Option<IpFamily>,
    /// The protocol matched so far, which ports need.
    l4: Option<Protocol>,
}

impl Compiler {
    fn condition(&mut self, condition: &Match) -> Result<(), FilterError> {
        match condition {
            Match::Source { net, negate } => self.address(net, true, *negate),
            Match::Destination { net, negate } => self.address(net, false, *negate),
            Match::SourceInSet {
                set,
                family,
                negate,
            } => self.lookup(set, *family, true, *negate),
            Match::DestinationInSet {
                set,
                family,
                negate,
            } => self.lookup(set, *family, false, *negate),
            Match::Protocol(p) => {
                self.load(Expr::Meta {
                    key: MetaKey::L4proto,
                    dreg: Register::R1,
                });
                self.cmp(CmpOp::Eq, vec![p.number()]);
                self.l4 = Some(*p);
                Ok(())
            }
            Match::SourcePort(port) => self.port(0, *port),
            Match::DestinationPort(port) => self.port(2, *port),
            Match::DestinationPorts(ports) => self.ports(2, ports),
            Match::InInterface { name, negate } => self.ifname(MetaKey::Iifname, name, *negate),
            Match::OutInterface { name, negate } => self.ifname(MetaKey::Oifname, name, *negate),
            Match::LocalDestination => {
                self.load(Expr::Fib {
                    flags: fib::DADDR,
                    result: FibResult::AddrType,
                    dreg: Register::R1,
                });
                self.cmp(CmpOp::Eq, RTN_LOCAL.to_ne_bytes().to_vec());
                Ok(())
            }
            Match::Unicast => {
                self.load(Expr::Meta {
                    key: MetaKey::Pkttype,
                    dreg: Register::R1,
                });
                self.cmp(CmpOp::Eq, vec![PACKET_HOST]);
                Ok(())
            }
            Match::Mark { value, mask } => {
                if value & !mask != 0 {
                    return Err(FilterError::invalid(
                        "mark",
                        format!("{value:#x}/{mask:#x}"),
                        "the value has bits outside the mask",
                    ));
                }
                self.load(Expr::Meta {
                    key: MetaKey::Mark,
                    dreg: Register::R1,
                });
                if *mask != u32::MAX {
                    self.bitwise(mask.to_ne_bytes().to_vec(), vec![0; 4], true);
                }
                self.cmp(CmpOp::Eq, value.to_ne_bytes().to_vec());
                Ok(())
            }
            Match::CtState(states) => {
                let bits = states.iter().fold(0, |bits, s| bits | s.bit());
                if bits == 0 {
                    return Err(FilterError::invalid("ct state", "[]", "names no state"));
                }
                self.load(Expr::Ct {
                    key: CtKey::State,
                    dreg: Register::R1,
                });
                self.bitwise(bits.to_ne_bytes().to_vec(), vec![0; 4], false);
                self.cmp(CmpOp::Neq, vec![0; 4]);
                Ok(())
            }
        }
    }

    fn action(&mut self, action: &Action) -> Result<(), FilterError> {
        let verdict = match action {
            Action::Accept => Verdict::Accept,
            Action::Drop => Verdict::Drop,
            Action::Return => Verdict::Return,
            Action::Jump(chain) => Verdict::Jump(chain.clone()),
            Action::Goto(chain) => Verdict::Goto(chain.clone()),
            Action::Dnat { addr, port } => return self.nat(NatKind::Dnat, *addr, *port),
            Action::Snat { addr, port } => return self.nat(NatKind::Snat, *addr, *port),
            Action::Masquerade => {
                self.out.push(Expr::Masq { flags: 0 });
                return Ok(());
            }
            Action::SetMark { value, mask } => {
                if *mask == u32::MAX {
                    self.out.push(Expr::Immediate {
                        dreg: Register::R1,
                        data: value.to_ne_bytes().to_vec(),
                    });
                } else {
                    self.load(Expr::Meta {
                        key: MetaKey::Mark,
                        dreg: Register::R1,
                    });
                    let keep = !mask;
                    self.bitwise(
                        keep.to_ne_bytes().to_vec(),
                        value.to_ne_bytes().to_vec(),
                        true,
                    );
                }
                self.out.push(Expr::MetaSet {
                    key: MetaKey::Mark,
                    sreg: Register::R1,
                });
                return Ok(());
            }
        };
        self.out.push(Expr::Verdict(verdict));
        Ok(())
    }

    /// `ip saddr NET`: nft loads only the prefix's whole bytes, and masks
    /// when the prefix does not end on a byte.
    fn address(&mut self, net: &IpNetwork, source: bool, negate: bool) -> Result<(), FilterError> {
        let family = net.family();
        self.ip_version(family, &net.to_string())?;
        let bytes = octets(net.network());
        let full = bytes.len() as u32;
        let prefix = u32::from(net.prefix());
        let offset = header_offset(family, source);
        let op = if negate { CmpOp::Neq } else { CmpOp::Eq };
        if prefix == full * 8 {
            self.payload(PayloadBase::Network, offset, full);
            self.cmp(op, bytes);
        } else if prefix > 0 && prefix % 8 == 0 {
            self.payload(PayloadBase::Network, offset, prefix / 8);
            self.cmp(op, bytes[..(prefix / 8) as usize].to_vec());
        } else {
            self.payload(PayloadBase::Network, offset, full);
            let mask = (0..full * 8)
                .map(|bit| bit < prefix)
                .collect::<Vec<_>>()
                .chunks(8)
                .map(|bits| bits.iter().fold(0u8, |byte, &on| byte << 1 | u8::from(on)))
                .collect();
            self.bitwise(mask, vec![0; full as usize], false);
            self.cmp(op, bytes);
        }
        Ok(())
    }

    fn lookup(
        &mut self,
        set: &str,
        family: IpFamily,
        source: bool,
        negate: bool,
    ) -> Result<(), FilterError> {
        crate::table::validate_name("set name", set)?;
        self.ip_version(family, &format!("@{set}"))?;
        let len = match family {
            IpFamily::V4 => 4,
            IpFamily::V6 => 16,
        };
        self.payload(PayloadBase::Network, header_offset(family, source), len);
        self.out.push(Expr::Lookup {
            sreg: Register::R1,
            set: set.to_string(),
            set_id: None,
            invert: negate,
        });
        Ok(())
    }

    fn port(&mut self, offset: u32, port: u16) -> Result<(), FilterError> {
        if !self.l4.is_some_and(Protocol::has_ports) {
            return Err(FilterError::invalid(
                "port match",
                port.to_string(),
                "needs a TCP, UDP or SCTP protocol match before it",
            ));
        }
        self.payload(PayloadBase::Transport, offset, 2);
        self.cmp(CmpOp::Eq, port.to_be_bytes().to_vec());
        Ok(())
    }

    /// `tcp dport { 80, 443 }`: one port is a comparison, several a
    /// lookup in an anonymous set.
    fn ports(&mut self, offset: u32, ports: &[u16]) -> Result<(), FilterError> {
        match ports {
            [] => Err(FilterError::invalid("port list", "[]", "names no port")),
            [port] => self.port(offset, *port),
            [first, ..] => {
                // Checks the protocol as a single port would.
                self.port(offset, *first)?;
                self.out.pop();
                self.sets.push(AnonymousSet {
                    lookup: self.out.len(),
                    key: SetKey::InetService,
                    elements: ports.iter().map(|p| p.to_be_bytes().to_vec()).collect(),
                });
                self.out.push(Expr::Lookup {
                    sreg: Register::R1,
                    set: ANONYMOUS_SET.to_string(),
                    set_id: None,
                    invert: false,
                });
                Ok(())
            }
        }
    }

    /// `iifname NAME`: nft compares all 16 bytes (`IFNAMSIZ`), the name
    /// padded with NULs.
    fn ifname(&mut self, key: MetaKey, name: &str, negate: bool) -> Result<(), FilterError> {
        validate_ifname(name)?;
        self.load(Expr::Meta {
            key,
            dreg: Register::R1,
        });
        let mut data = name.as_bytes().to_vec();
        data.resize(16, 0);
        self.cmp(if negate { CmpOp::Neq } else { CmpOp::Eq }, data);
        Ok(())
    }

    fn nat(&mut self, kind: NatKind, addr: IpAddr, port: Option<u16>) -> Result<(), FilterError> {
        // An IPv4-mapped address is IPv4, as in the reference (Go's
        // `To4`), and 4 bytes.
        let addr = addr.to_canonical();
        let family = IpFamily::of(addr);
        self.ip_version(family, &addr.to_string())?;
        self.out.push(Expr::Immediate {
            dreg: Register::R1,
            data: octets(addr),
        });
        if let Some(port) = port {
            self.out.push(Expr::Immediate {
                dreg: Register::R2,
                data: port.to_be_bytes().to_vec(),
            });
        }
        self.out.push(Expr::Nat {
            kind,
            family,
            addr: Some(Register::R1),
            proto: port.map(|_| Register::R2),
            // NF_NAT_RANGE_PROTO_SPECIFIED, as nft sets it with a port.
            flags: if port.is_some() { 2 } else { 0 },
        });
        Ok(())
    }

    /// Refuses an address of the other version in an ip or ip6 table; in
    /// an inet table, checks the packet's version once (`meta nfproto`).
    fn ip_version(&mut self, ip: IpFamily, what: &str) -> Result<(), FilterError> {
        if !self.family.carries(ip) {
            return Err(FilterError::invalid(
                "address",
                what,
                format!("is not of the {} family", self.family),
            ));
        }
        if self.family == Family::Inet && self.nfproto != Some(ip) {
            self.load(Expr::Meta {
                key: MetaKey::Nfproto,
                dreg: Register::R1,
            });
            self.cmp(CmpOp::Eq, vec![nfproto(Family::of(ip))]);
            self.nfproto = Some(ip);
        }
        Ok(())
    }

    fn load(&mut self, expr: Expr) {
        self.out.push(expr);
    }

    fn payload(&mut self, base: PayloadBase, offset: u32, len: u32) {
        self.out.push(Expr::Payload {
            base,
            offset,
            len,
            dreg: Register::R1,
        });
    }

    fn bitwise(&mut self, mask: Vec<u8>, xor: Vec<u8>, explicit_op: bool) {
        self.out.push(Expr::Bitwise {
            sreg: Register::R1,
            dreg: Register::R1,
            mask,
            xor,
            explicit_op,
        });
    }

    fn cmp(&mut self, op: CmpOp, data: Vec<u8>) {
        self.out.push(Expr::Cmp {
            op,
            sreg: Register::R1,
            data,
        });
    }
}

/// Where the source or destination address starts in the IP header.
fn header_offset(family: IpFamily, source: bool) -> u32 {
    match (family, source) {
        (IpFamily::V4, true) => 12,
        (IpFamily::V4, false) => 16,
        (IpFamily::V6, true) => 8,
        (IpFamily::V6, false) => 24,
    }
}

fn octets(addr: IpAddr) -> Vec<u8> {
    match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}
