//! Rules as data: what a packet must match, what then happens, and the
//! comment that finds the rule again.

use std::net::IpAddr;

use cni_types::{IpFamily, IpNetwork};

/// One rule: conditions that must all hold, then an optional action.
///
/// Each backend renders it its own way (nft expressions, iptables
/// arguments) and checks it first: a rule that a backend cannot express
/// is refused before anything changes.
///
/// ```
/// use cni_netfilter::{Action, Match, Protocol, Rule};
///
/// // portmap's `tcp dport 8080 dnat to 10.88.0.5:80 comment "ID"`
/// let rule = Rule::new("hostports")
///     .matching(Match::Protocol(Protocol::Tcp))
///     .matching(Match::DestinationPort(8080))
///     .then(Action::Dnat { addr: "10.88.0.5".parse()?, port: Some(80) })
///     .comment("ID");
/// assert_eq!(rule.comment.as_deref(), Some("ID"));
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
///
/// Go: `knftables.Rule` (there the rule is nft text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The chain it goes into.
    pub chain: String,
    /// Conditions, in order; all must hold.
    pub matches: Vec<Match>,
    /// Count the packets and bytes that matched (nft `counter`; iptables
    /// counts every rule anyway).
    pub counter: bool,
    /// What happens to a matching packet; `None` lets it go on to the next
    /// rule.
    pub action: Option<Action>,
    /// The comment the rule is found again by (nft: `comment "..."`,
    /// iptables: `-m comment --comment "..."`).
    pub comment: Option<String>,
}

impl Rule {
    /// An empty rule in `chain`: matches everything, does nothing.
    pub fn new(chain: impl Into<String>) -> Rule {
        Rule {
            chain: chain.into(),
            matches: Vec::new(),
            counter: false,
            action: None,
            comment: None,
        }
    }

    /// Adds a condition.
    pub fn matching(mut self, condition: Match) -> Rule {
        self.matches.push(condition);
        self
    }

    /// Counts what matched.
    pub fn counted(mut self) -> Rule {
        self.counter = true;
        self
    }

    /// Sets the action.
    pub fn then(mut self, action: Action) -> Rule {
        self.action = Some(action);
        self
    }

    /// Sets the comment.
    pub fn comment(mut self, comment: impl Into<String>) -> Rule {
        self.comment = Some(comment.into());
        self
    }
}

/// A condition on a packet. Each names its nft and iptables spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Match {
    /// `ip saddr NET` / `-s NET` (`!=` / `! -s` when `negate`). A single
    /// address is a network of full length.
    Source {
        /// The network (or address) to compare with.
        net: IpNetwork,
        /// Match packets from outside it instead.
        negate: bool,
    },
    /// `ip daddr NET` / `-d NET`.
    Destination {
        /// The network (or address) to compare with.
        net: IpNetwork,
        /// Match packets to outside it instead.
        negate: bool,
    },
    /// `ip saddr @SET` (nftables only): the source address is in a named
    /// set of `ipv4_addr` (or `ipv6_addr` for [`IpFamily::V6`]).
    SourceInSet {
        /// The set's name, in the same table.
        set: String,
        /// The family of the set's addresses.
        family: IpFamily,
        /// Match addresses not in the set instead.
        negate: bool,
    },
    /// `ip daddr @SET` (nftables only).
    DestinationInSet {
        /// The set's name, in the same table.
        set: String,
        /// The family of the set's addresses.
        family: IpFamily,
        /// Match addresses not in the set instead.
        negate: bool,
    },
    /// `meta l4proto P` / `-p P`.
    Protocol(Protocol),
    /// `tcp sport N` / `--sport N`; needs a [`Match::Protocol`] of TCP,
    /// UDP or SCTP before it.
    SourcePort(u16),
    /// `tcp dport N` / `--dport N`; needs a [`Match::Protocol`] of TCP,
    /// UDP or SCTP before it.
    DestinationPort(u16),
    /// `tcp dport { N, M }` / `-m multiport --dports N,M`: any of the
    /// ports (nft makes an anonymous set of them); needs a
    /// [`Match::Protocol`] of TCP, UDP or SCTP before it.
    DestinationPorts(Vec<u16>),
    /// `iifname NAME` / `-i NAME`.
    InInterface {
        /// The interface name.
        name: String,
        /// Match other interfaces instead.
        negate: bool,
    },
    /// `oifname NAME` / `-o NAME`.
    OutInterface {
        /// The interface name.
        name: String,
        /// Match other interfaces instead.
        negate: bool,
    },
    /// `fib daddr type local` / `-m addrtype --dst-type LOCAL`: addressed
    /// to this host (portmap's condition for its DNAT chains).
    LocalDestination,
    /// `meta pkttype host` / `-m pkttype --pkt-type unicast`: a packet
    /// addressed to one host, neither broadcast nor multicast (a bridged
    /// packet counts as addressed to its host here: the kernel's bridge
    /// filtering marks it so before the forward hook runs).
    Unicast,
    /// `meta mark & MASK == VALUE` / `-m mark --mark VALUE/MASK`.
    Mark {
        /// The bits that must be set, within `mask`.
        value: u32,
        /// The bits compared.
        mask: u32,
    },
    /// `ct state S,..` / `-m conntrack --ctstate S,..`: any of the states.
    CtState(Vec<CtState>),
}

impl Match {
    /// [`Match::Source`] without negation.
    pub fn source(net: IpNetwork) -> Match {
        Match::Source { net, negate: false }
    }

    /// [`Match::Destination`] without negation.
    pub fn destination(net: IpNetwork) -> Match {
        Match::Destination { net, negate: false }
    }

    /// [`Match::Destination`] negated: to outside `net`.
    pub fn not_destination(net: IpNetwork) -> Match {
        Match::Destination { net, negate: true }
    }
}

/// A layer 4 protocol of [`Match::Protocol`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// TCP (6).
    Tcp,
    /// UDP (17).
    Udp,
    /// SCTP (132).
    Sctp,
    /// ICMP (1).
    Icmp,
    /// ICMPv6 (58).
    Icmpv6,
}

impl Protocol {
    /// The IANA protocol number.
    pub fn number(self) -> u8 {
        match self {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
            Protocol::Sctp => 132,
            Protocol::Icmp => 1,
            Protocol::Icmpv6 => 58,
        }
    }

    /// The name nft and iptables give it.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
            Protocol::Icmp => "icmp",
            Protocol::Icmpv6 => "ipv6-icmp",
        }
    }

    /// Whether its header starts with source and destination ports.
    pub fn has_ports(self) -> bool {
        matches!(self, Protocol::Tcp | Protocol::Udp | Protocol::Sctp)
    }
}

/// A connection tracking state of [`Match::CtState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtState {
    /// A packet conntrack could not place.
    Invalid,
    /// A packet of a connection that has seen both directions.
    Established,
    /// A new connection related to an existing one (an ICMP error, FTP data).
    Related,
    /// The first packet of a connection.
    New,
}

impl CtState {
    /// The kernel's bit (`NF_CT_STATE_*_BIT`).
    pub(crate) fn bit(self) -> u32 {
        match self {
            CtState::Invalid => 1,
            CtState::Established => 2,
            CtState::Related => 4,
            CtState::New => 8,
        }
    }

    /// The name iptables gives it.
    pub(crate) fn iptables_name(self) -> &'static str {
        match self {
            CtState::Invalid => "INVALID",
            CtState::Established => "ESTABLISHED",
            CtState::Related => "RELATED",
            CtState::New => "NEW",
        }
    }
}

/// What happens to a packet that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// `accept` / `-j ACCEPT`.
    Accept,
    /// `drop` / `-j DROP`.
    Drop,
    /// `return` / `-j RETURN`: back to the calling chain.
    Return,
    /// `jump CHAIN` / `-j CHAIN`: run the chain, then come back.
    Jump(String),
    /// `goto CHAIN` / `-g CHAIN`: run the chain, and don't come back.
    Goto(String),
    /// `dnat to ADDR[:PORT]` / `-j DNAT --to-destination ADDR[:PORT]`.
    Dnat {
        /// The new destination address.
        addr: IpAddr,
        /// The new destination port, if it changes.
        port: Option<u16>,
    },
    /// `snat to ADDR[:PORT]` / `-j SNAT --to-source ADDR[:PORT]`.
    Snat {
        /// The new source address.
        addr: IpAddr,
        /// The new source port, if it changes.
        port: Option<u16>,
    },
    /// `masquerade` / `-j MASQUERADE`: source NAT to the outgoing
    /// interface's address.
    Masquerade,
    /// `meta mark set meta mark & ~MASK ^ VALUE` /
    /// `-j MARK --set-xmark VALUE/MASK`: clears `mask`'s bits, then
    /// flips `value`'s.
    SetMark {
        /// The bits to set.
        value: u32,
        /// The bits cleared first.
        mask: u32,
    },
}

impl Action {
    /// The chain it jumps or goes to, if any.
    pub(crate) fn target_chain(&self) -> Option<&str> {
        match self {
            Action::Jump(chain) | Action::Goto(chain) => Some(chain),
            _ => None,
        }
    }
}

/// Checks an interface name of a match: 1 to 15 bytes (`IFNAMSIZ` less
/// its NUL) of printable ASCII without quotes or backslash.
pub(crate) fn validate_ifname(name: &str) -> Result<(), crate::FilterError> {
    crate::table::validate_word("interface name", name, 15)
}

/// Checks a comment: at most `max` bytes, no control characters, and no
/// `"` unless `quotes` (iptables escapes them; nft would print a comment
/// it cannot read back).
pub(crate) fn validate_comment(
    comment: &str,
    max: usize,
    quotes: bool,
) -> Result<(), crate::FilterError> {
    let reason = if comment.len() > max {
        format!("is longer than {max} bytes")
    } else if let Some(c) = comment
        .chars()
        .find(|&c| c.is_control() || (!quotes && c == '"'))
    {
        format!("contains {c:?}")
    } else {
        return Ok(());
    };
    Err(crate::FilterError::invalid("comment", comment, reason))
}
