//! Tables and chains as data: what a plugin asks for, before any backend.

use std::fmt;

use cni_types::IpFamily;

use crate::FilterError;

/// An address family of tables, as nftables names them.
///
/// The iptables backend maps [`Family::Ip`] to `iptables` and
/// [`Family::Ip6`] to `ip6tables`; it has no [`Family::Inet`] or
/// [`Family::Bridge`].
///
/// Go: `knftables.Family` (`IPv4Family`, `IPv6Family`, `InetFamily`,
/// `BridgeFamily`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `ip`: IPv4 packets.
    Ip,
    /// `ip6`: IPv6 packets.
    Ip6,
    /// `inet`: both; rules that look at an address match one version.
    Inet,
    /// `bridge`: frames crossing a Linux bridge, seen at layer 2; its rules
    /// match link-layer fields (the bridge plugin's `macspoofchk`), not
    /// addresses.
    Bridge,
}

impl Family {
    /// The name nft gives it: `ip`, `ip6`, `inet`.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Ip => "ip",
            Family::Ip6 => "ip6",
            Family::Inet => "inet",
            Family::Bridge => "bridge",
        }
    }

    /// The table family of one IP family: [`Family::Ip`] or
    /// [`Family::Ip6`] (`iptables` or `ip6tables`).
    pub fn of(ip: IpFamily) -> Family {
        match ip {
            IpFamily::V4 => Family::Ip,
            IpFamily::V6 => Family::Ip6,
        }
    }

    /// Whether tables of this family see packets of that IP family.
    pub fn carries(self, ip: IpFamily) -> bool {
        match self {
            Family::Ip => ip == IpFamily::V4,
            Family::Ip6 => ip == IpFamily::V6,
            Family::Inet => true,
            // Address matches would need nft's `meta protocol` guard,
            // which nothing here asks for yet.
            Family::Bridge => false,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A table: its family, name and comment.
///
/// For iptables the name is one of the fixed tables (`nat`, `filter`,
/// `mangle`, `raw`, `security`) and the comment is not stored.
///
/// ```
/// use cni_netfilter::{Family, Table};
///
/// let table = Table::new(Family::Ip, "cni_hostport").with_comment("CNI portmap plugin");
/// assert_eq!(table.to_string(), "ip cni_hostport");
/// ```
///
/// Go: `knftables.Table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Its address family.
    pub family: Family,
    /// Its name.
    pub name: String,
    /// Its comment (nft: `comment "..."` on the table).
    pub comment: Option<String>,
}

impl Table {
    /// A table without comment.
    pub fn new(family: Family, name: impl Into<String>) -> Table {
        Table {
            family,
            name: name.into(),
            comment: None,
        }
    }

    /// The same table with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Table {
        self.comment = Some(comment.into());
        self
    }
}

impl fmt::Display for Table {
    /// `FAMILY NAME`, as nft names a table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.family, self.name)
    }
}

/// A chain: regular when `base` is `None`, else a base chain attached to
/// a hook.
///
/// ```
/// use cni_netfilter::{BaseChain, Chain, ChainType, Hook, priority};
///
/// let prerouting = Chain::base("prerouting", BaseChain::new(ChainType::Nat, Hook::Prerouting, priority::DSTNAT));
/// assert!(prerouting.base.is_some());
/// let hostports = Chain::new("hostports");
/// assert!(hostports.base.is_none());
/// ```
///
/// Go: `knftables.Chain`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// Its name.
    pub name: String,
    /// Type, hook, priority and policy, for a base chain.
    pub base: Option<BaseChain>,
    /// Its comment (nftables only).
    pub comment: Option<String>,
}

impl Chain {
    /// A regular chain: reached only by a jump or goto.
    pub fn new(name: impl Into<String>) -> Chain {
        Chain {
            name: name.into(),
            base: None,
            comment: None,
        }
    }

    /// A base chain: the kernel runs it at its hook. Under iptables, the
    /// built-in chain of that name (`PREROUTING`).
    pub fn base(name: impl Into<String>, base: BaseChain) -> Chain {
        Chain {
            base: Some(base),
            ..Chain::new(name)
        }
    }

    /// The same chain with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Chain {
        self.comment = Some(comment.into());
        self
    }
}

/// What makes a chain a base chain: `type T hook H priority P; policy X;`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseChain {
    /// `filter`, `nat` or `route`.
    pub kind: ChainType,
    /// Where in the packet's path it runs.
    pub hook: Hook,
    /// Order among the chains of the same hook, lower first; see
    /// [`priority`].
    pub priority: i32,
    /// What happens to packets no rule decided on; the kernel's default
    /// (accept) when `None`.
    pub policy: Option<Policy>,
}

impl BaseChain {
    /// A base chain with the kernel's default policy (accept).
    pub fn new(kind: ChainType, hook: Hook, priority: i32) -> BaseChain {
        BaseChain {
            kind,
            hook,
            priority,
            policy: None,
        }
    }
}

/// The type of a base chain.
///
/// Go: `knftables.BaseChainType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainType {
    /// `filter`: accept or drop.
    Filter,
    /// `nat`: address translation, consulted for a connection's first packet.
    Nat,
    /// `route`: may change marks and addresses that routing looks at.
    Route,
}

impl ChainType {
    /// The name nft gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            ChainType::Filter => "filter",
            ChainType::Nat => "nat",
            ChainType::Route => "route",
        }
    }
}

/// A netfilter hook of the ip, ip6 and inet families.
///
/// Go: `knftables.BaseChainHook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// `prerouting`: every packet arriving, before routing.
    Prerouting,
    /// `input`: packets for this host.
    Input,
    /// `forward`: packets routed through this host.
    Forward,
    /// `output`: packets this host sends.
    Output,
    /// `postrouting`: every packet leaving, after routing.
    Postrouting,
}

impl Hook {
    /// The name nft gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::Prerouting => "prerouting",
            Hook::Input => "input",
            Hook::Forward => "forward",
            Hook::Output => "output",
            Hook::Postrouting => "postrouting",
        }
    }

    /// The kernel's number (`NF_INET_PRE_ROUTING` ..).
    pub(crate) fn number(self) -> u32 {
        match self {
            Hook::Prerouting => 0,
            Hook::Input => 1,
            Hook::Forward => 2,
            Hook::Output => 3,
            Hook::Postrouting => 4,
        }
    }
}

/// A base chain's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Let the packet through.
    Accept,
    /// Drop the packet.
    Drop,
}

/// The standard priorities of the ip, ip6 and inet families, as nft
/// names them. knftables (and so the reference plugins) sends them as
/// numbers, because older nft refuses `dstnat` on the output hook; so do
/// we, and `nft list` shows the names back where it knows them.
///
/// Go: `knftables.BaseChainPriority` with `knftables.ParsePriority`.
pub mod priority {
    /// `raw`: before connection tracking.
    pub const RAW: i32 = -300;
    /// `mangle`.
    pub const MANGLE: i32 = -150;
    /// `dstnat`: destination NAT (portmap's prerouting and output chains).
    pub const DSTNAT: i32 = -100;
    /// `filter`.
    pub const FILTER: i32 = 0;
    /// `security`.
    pub const SECURITY: i32 = 50;
    /// `srcnat`: source NAT (masquerading).
    pub const SRCNAT: i32 = 100;
}

/// The longest table, chain or set name nftables takes
/// (`NFT_NAME_MAXLEN` less its NUL).
pub(crate) const MAX_NAME_LEN: usize = 255;

/// Checks a table, chain or set name: 1 to 255 bytes of printable ASCII
/// without whitespace, quotes or backslash, not starting with `-` or `!`
/// (iptables would read an option). The iptables backend also checks its
/// own, shorter limit.
pub(crate) fn validate_name(what: &'static str, name: &str) -> Result<(), FilterError> {
    if name.starts_with(['-', '!']) {
        return Err(FilterError::invalid(what, name, "starts with '-' or '!'"));
    }
    validate_word(what, name, MAX_NAME_LEN)
}

/// Checks one word of a rule (a name, an interface): 1 to `max` bytes of
/// printable ASCII without whitespace, quotes or backslash, so that both
/// backends read it back as it was given.
pub(crate) fn validate_word(what: &'static str, word: &str, max: usize) -> Result<(), FilterError> {
    let reason = if word.is_empty() {
        "is empty".to_string()
    } else if word.len() > max {
        format!("is longer than {max} bytes")
    } else if let Some(c) = word
        .chars()
        .find(|c| !c.is_ascii_graphic() || matches!(c, '"' | '\'' | '\\'))
    {
        format!("contains {c:?}")
    } else {
        return Ok(());
    };
    Err(FilterError::invalid(what, word, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_a_backend_would_misread_are_refused_naming_the_character() {
        for (name, reason) in [
            ("", "is empty"),
            ("a b", "contains ' '"),
            ("-j", "starts with '-' or '!'"),
            ("a\"b", "contains '\"'"),
            ("é", "contains 'é'"),
        ] {
            let err = validate_name("chain name", name).unwrap_err();
            assert!(err.to_string().ends_with(reason), "{name:?}: {err}");
        }
        assert!(validate_name("chain name", &"x".repeat(256)).is_err());
        for name in ["hostports_all", "CNI-DN-1a2b", "cni_plugins_masquerade"] {
            validate_name("chain name", name).unwrap();
        }
    }
}
