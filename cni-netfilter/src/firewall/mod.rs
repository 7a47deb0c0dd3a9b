//! The firewall of the reference `firewall` plugin: let a container's
//! traffic through the host's forwarding filter, and isolate bridges from
//! each other (`ingressPolicy`), under iptables exactly as the reference
//! lays it out, or under nftables in a table of our own.
//!
//! - iptables (`iptables.rs`), in the `filter` table of each family the
//!   container has addresses in:
//!   - `FORWARD` starts with `-m comment --comment "CNI firewall plugin
//!     rules" -j CNI-FORWARD`;
//!   - [`FORWARD_CHAIN`] (`CNI-FORWARD`) starts with `-m comment --comment
//!     "CNI firewall plugin admin overrides" -j ADMIN`, where `ADMIN` is
//!     `iptablesAdminChainName` ([`DEFAULT_ADMIN_CHAIN`], `CNI-ADMIN`),
//!     then has per container address `-d ADDRESS/32 -m conntrack
//!     --ctstate RELATED,ESTABLISHED -j ACCEPT` and `-s ADDRESS/32 -j
//!     ACCEPT`;
//!   - for `same-bridge` and `isolated`, `FORWARD` starts with a jump to
//!     [`STAGE_1`] (`CNI-ISOLATION-STAGE-1`), which has per bridge `-i BR
//!     ! -o BR -j CNI-ISOLATION-STAGE-2` (and with `isolated`, `-i BR -o
//!     BR -j DROP`) before a final `-j RETURN`; [`STAGE_2`] has `-o BR -j
//!     DROP` per bridge, then `-j RETURN`. Comments as the reference's.
//! - nftables (`nftables.rs`), our own layout (the reference has no
//!   nftables backend), the table [`NFT_TABLE`] (`inet
//!   cni_plugins_firewall`):
//!   - `forward` (filter hook forward, priority filter, policy accept):
//!     `jump isolation_stage_1`, `jump admin`, `meta pkttype host jump
//!     cni_forward`, written again by an ADD that finds it otherwise
//!     (earlier versions jump to `cni_forward` with every packet: the
//!     verdict is the same, see below; while both versions run ADDs,
//!     during an upgrade, each rewrites it);
//!   - `admin`: empty, for the administrator's rules (the reference's
//!     admin chain; `iptablesAdminChainName` does not apply);
//!   - `cni_forward`: per container address `ip daddr ADDRESS ct state
//!     established,related accept` and `ip saddr ADDRESS accept`, with the
//!     attachment's comment (hashes of network and attachment, then a
//!     readable tail, as the reference's nftables masquerading comments),
//!     and their handles recorded ([`crate::nft::OwnedRules`], group
//!     `firewall:NETWORK`), so that DEL and a repeated ADD delete them by
//!     handle rather than dumping a chain that holds every pod's rules;
//!   - `isolation_stage_1`: per bridge `iifname BR oifname != BR jump
//!     isolation_stage_2` (and with `isolated`, `iifname BR oifname BR
//!     drop`); `isolation_stage_2`: `oifname BR drop`; each with a comment
//!     naming the bridge.
//!
//! ```no_run
//! use cni_netfilter::firewall::{self, IngressPolicy, Rules};
//! use cni_netfilter::masquerade::Attachment;
//! use cni_netfilter::BackendKind;
//!
//! let addresses = ["10.88.0.5/16".parse()?];
//! let rules = Rules {
//!     attachment: Attachment { network: "podman", ifname: "eth0", container_id: "c1" },
//!     addresses: &addresses,
//!     admin_chain: firewall::DEFAULT_ADMIN_CHAIN,
//!     policy: IngressPolicy::SameBridge,
//!     bridge: Some("cni-podman0"),
//! };
//! firewall::add(BackendKind::Iptables, &rules)?;
//! firewall::check(BackendKind::Iptables, &rules)?;
//! firewall::del(&rules, true)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Go: plugins `plugins/meta/firewall` (`iptables.go`,
//! `ingresspolicy.go`).
//!
//! # Where we deliberately differ
//! - [`del`] cleans both backends (a backend the host cannot use is
//!   skipped), since the rules may come from another configuration, and
//!   removes a bridge's isolation rules when the caller says the
//!   attachment was the bridge's last: the reference never removes them,
//!   so a later network reusing the bridge name (Podman does) silently
//!   inherits another policy.
//! - [`check`] only reads: the reference's CHECK creates the chains it
//!   then looks for. It also checks the isolation rules.
//! - The nftables backend is ours. Its `accept` ends the packet's walk
//!   through our table only: a drop in another table's forward chain (an
//!   iptables-nft `FORWARD` with policy DROP) still drops it. The
//!   isolation drops hold whatever other tables say. Since our table
//!   accepts a packet whatever `cni_forward` says, only unicast packets
//!   take the jump there: a multicast packet is flooded to every port of
//!   a bridge, and would walk two rules per container address at each.
//! - Under iptables, isolating a bridge whose name ends with `+` is
//!   refused with code 7 before anything changes
//!   ([`literal_ifname`](crate::iptables::literal_ifname)): iptables
//!   reads `-o cni+` as every `cni*` link and `-o +` as every link (a
//!   rule then listed without `-o`, which no DEL could find again). The
//!   reference writes them. The nftables backend matches the whole name.

mod iptables;
mod nftables;

use std::fmt;
use std::str::FromStr;

use cni_types::{IpNetwork, ValidAttachments};

pub use nftables::{table as nft_table, TABLE as NFT_TABLE};

use crate::masquerade::both;
use crate::masquerade::Attachment;
use crate::{BackendKind, FilterError};

/// The reference's chain of per-address rules, in iptables' `filter`
/// table.
pub const FORWARD_CHAIN: &str = "CNI-FORWARD";
/// The admin chain when `iptablesAdminChainName` is not given.
pub const DEFAULT_ADMIN_CHAIN: &str = "CNI-ADMIN";
/// The first isolation chain of iptables' `filter` table.
pub const STAGE_1: &str = "CNI-ISOLATION-STAGE-1";
/// The second isolation chain of iptables' `filter` table.
pub const STAGE_2: &str = "CNI-ISOLATION-STAGE-2";

/// Which traffic into a container the firewall lets through
/// (`ingressPolicy`).
///
/// Go: plugins `firewall.IngressPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IngressPolicy {
    /// `"open"` (also `""`, and the default): everything.
    #[default]
    Open,
    /// `"same-bridge"`: "connections from the same bridge are accepted,
    /// others are blocked", as Docker's networks.
    SameBridge,
    /// `"isolated"`: as `same-bridge`, except "that connections from the
    /// same bridge are also blocked" (Docker's `enable_icc=false`).
    Isolated,
}

impl IngressPolicy {
    /// The configuration's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            IngressPolicy::Open => "open",
            IngressPolicy::SameBridge => "same-bridge",
            IngressPolicy::Isolated => "isolated",
        }
    }

    /// Whether it isolates bridges, so needs the bridge's name.
    pub fn isolates(self) -> bool {
        self != IngressPolicy::Open
    }
}

impl fmt::Display for IngressPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for IngressPolicy {
    type Err = FilterError;

    /// Parses `ingressPolicy`; anything else is an error naming the value,
    /// as the reference's "unknown ingress policy".
    fn from_str(s: &str) -> Result<IngressPolicy, FilterError> {
        match s {
            "" | "open" => Ok(IngressPolicy::Open),
            "same-bridge" => Ok(IngressPolicy::SameBridge),
            "isolated" => Ok(IngressPolicy::Isolated),
            _ => Err(FilterError::invalid(
                "ingressPolicy",
                s,
                "must be \"open\", \"same-bridge\" or \"isolated\"",
            )),
        }
    }
}

/// Checks an `iptablesAdminChainName`: a name iptables takes for a chain
/// of its own (1 to 28 bytes of printable ASCII, no quotes, not starting
/// with `-` or `!`) that is not a built-in chain or target.
pub fn validate_admin_chain(name: &str) -> Result<(), FilterError> {
    const RESERVED: [&str; 10] = [
        "ACCEPT",
        "DROP",
        "RETURN",
        "QUEUE",
        "INPUT",
        "OUTPUT",
        "FORWARD",
        "PREROUTING",
        "POSTROUTING",
        FORWARD_CHAIN,
    ];
    crate::table::validate_name("iptablesAdminChainName", name)?;
    crate::table::validate_word(
        "iptablesAdminChainName",
        name,
        crate::iptables::MAX_CHAIN_LEN,
    )?;
    if RESERVED.contains(&name) {
        return Err(FilterError::invalid(
            "iptablesAdminChainName",
            name,
            "is a built-in chain or target, or the plugin's own chain",
        ));
    }
    Ok(())
}

/// What one attachment's firewall is made of.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// Whose rules these are (names the nftables comments).
    pub attachment: Attachment<'a>,
    /// The container's addresses (prefixes do not matter: rules name the
    /// single address).
    pub addresses: &'a [IpNetwork],
    /// The iptables admin chain (`iptablesAdminChainName`).
    pub admin_chain: &'a str,
    /// `ingressPolicy`.
    pub policy: IngressPolicy,
    /// The bridge the container is on (the first interface of the
    /// previous result), needed when the policy isolates.
    pub bridge: Option<&'a str>,
}

impl Rules<'_> {
    /// The bridge to isolate, when the policy asks for it.
    fn isolated_bridge(&self) -> Result<Option<&str>, FilterError> {
        if !self.policy.isolates() {
            return Ok(None);
        }
        match self.bridge {
            Some(bridge) => {
                crate::rule::validate_ifname(bridge)?;
                Ok(Some(bridge))
            }
            None => Err(FilterError::invalid(
                "prevResult.interfaces",
                "",
                format!(
                    "ingressPolicy {:?} needs the bridge as the first interface: chain \"firewall\" after \"bridge\"",
                    self.policy.as_str()
                ),
            )),
        }
    }
}

/// Lets the attachment's traffic through and isolates its bridge as its
/// policy says, under `backend`. Repeating it changes nothing more.
///
/// Go: plugins firewall `cmdAdd` (the backend's `Add`, then
/// `setupIngressPolicy`).
pub fn add(backend: BackendKind, rules: &Rules) -> Result<(), FilterError> {
    let bridge = rules.isolated_bridge()?;
    if let (BackendKind::Iptables, Some(bridge)) = (backend, bridge) {
        // Before the first family's rules: a bridge named `cni+` would
        // isolate every `cni*` link, and one named `+` every link.
        crate::iptables::literal_ifname(bridge)?;
    }
    if rules.admin_chain != DEFAULT_ADMIN_CHAIN {
        validate_admin_chain(rules.admin_chain)?;
    }
    match backend {
        BackendKind::Iptables => iptables::add(rules, bridge),
        BackendKind::Nftables => nftables::add(rules, bridge),
    }
}

/// Fails naming the first rule of the attachment that is missing under
/// `backend`.
///
/// Go: plugins firewall `cmdCheck`.
pub fn check(backend: BackendKind, rules: &Rules) -> Result<(), FilterError> {
    let bridge = rules.isolated_bridge()?;
    match backend {
        BackendKind::Iptables => iptables::check(rules, bridge),
        BackendKind::Nftables => nftables::check(rules, bridge),
    }
}

/// Removes the attachment's rules under both backends (one the host
/// cannot use is skipped), and, when `last_on_bridge`, every isolation
/// rule of its bridge: the caller knows no other container is on it.
/// Repeating it changes nothing more.
///
/// Go: plugins firewall `cmdDel`, which never removes isolation rules.
pub fn del(rules: &Rules, last_on_bridge: bool) -> Result<(), FilterError> {
    let bridge = rules
        .bridge
        .filter(|_| last_on_bridge)
        .filter(|b| crate::rule::validate_ifname(b).is_ok());
    both(
        || iptables::del(rules.addresses, bridge),
        || nftables::del(Some(&rules.attachment), bridge),
    )
}

/// Removes every isolation rule of `bridge` under both backends (one the
/// host cannot use is skipped), whichever policy added it: for a bridge
/// no container is on any more.
pub fn forget_bridge(bridge: &str) -> Result<(), FilterError> {
    crate::rule::validate_ifname(bridge)?;
    both(
        || iptables::del(&[], Some(bridge)),
        || nftables::del(None, Some(bridge)),
    )
}

/// Whether `bridge` may have isolation rules under either layout, from
/// looks at the isolation chains alone (`true` where a look cannot tell:
/// iptables-legacy's tables, an error). A plugin asks this before it asks
/// whether the bridge has other ports (a dump of the node's links) to
/// decide on [`forget_bridge`]: most bridges have no isolation, and then
/// there is nothing to forget.
///
/// ```no_run
/// # fn vacated(_: &str) -> bool { true }
/// let bridge = "cni0";
/// if cni_netfilter::firewall::may_isolate(bridge) && vacated(bridge) {
///     cni_netfilter::firewall::forget_bridge(bridge)?;
/// }
/// # Ok::<(), cni_netfilter::FilterError>(())
/// ```
pub fn may_isolate(bridge: &str) -> bool {
    iptables::may_isolate(bridge) || nftables::may_isolate(bridge)
}

/// Removes the nftables rules of `network`'s attachments that `valid` does
/// not keep (nothing when the runtime sent no list), and the isolation
/// rules of bridges that no longer exist, as `bridge_exists` says. The
/// iptables layout does not say whose an address's rules are, so GC
/// leaves them to DEL.
pub fn gc(
    network: &str,
    valid: &ValidAttachments,
    bridge_exists: &dyn Fn(&str) -> bool,
) -> Result<(), FilterError> {
    both(
        || iptables::gc_bridges(bridge_exists),
        || nftables::gc(network, valid, bridge_exists),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingress_policies_are_the_reference_names_and_empty_is_open() {
        for (text, policy) in [
            ("", IngressPolicy::Open),
            ("open", IngressPolicy::Open),
            ("same-bridge", IngressPolicy::SameBridge),
            ("isolated", IngressPolicy::Isolated),
        ] {
            assert_eq!(text.parse::<IngressPolicy>().unwrap(), policy);
        }
        let err = "closed".parse::<IngressPolicy>().unwrap_err();
        assert!(
            err.to_string().contains("ingressPolicy \"closed\""),
            "{err}"
        );
    }

    #[test]
    fn an_admin_chain_iptables_would_refuse_or_misread_is_an_error_naming_the_field() {
        for name in [
            "",
            "a b",
            "-X",
            &"C".repeat(29),
            "ACCEPT",
            "CNI-FORWARD",
            "a\"b",
        ] {
            let err = validate_admin_chain(name).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("invalid iptablesAdminChainName"),
                "{name:?}: {err}"
            );
        }
        for name in ["CNI-ADMIN", "MY-OVERRIDES", &"C".repeat(28)] {
            validate_admin_chain(name).unwrap();
        }
    }

    #[test]
    fn an_isolating_policy_without_a_bridge_is_refused_before_any_change() {
        let rules = Rules {
            attachment: Attachment {
                network: "n",
                ifname: "eth0",
                container_id: "c",
            },
            addresses: &[],
            admin_chain: DEFAULT_ADMIN_CHAIN,
            policy: IngressPolicy::Isolated,
            bridge: None,
        };
        let err = add(BackendKind::Iptables, &rules).unwrap_err();
        assert!(
            err.to_string()
                .contains("chain \"firewall\" after \"bridge\""),
            "{err}"
        );
    }
}
