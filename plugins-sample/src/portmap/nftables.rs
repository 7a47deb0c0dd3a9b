//! portmap's nftables layout, as the reference lays it out: tables
//! `ip cni_hostport` and `ip6 cni_hostport` ("CNI portmap plugin"), one
//! rule per mapping commented with the container ID (cni-netfilter's
//! `tests/fixtures/portmap_nftables.nft` is the reference's own output):
//!
//! ```text
//! hostports_all:  jump hostip_hostports; jump hostports
//! prerouting:     (nat, prerouting, dstnat)  [conditions] fib daddr type local jump hostports_all
//! output:         (nat, output, dstnat)      [conditions] fib daddr type local jump hostports_all
//! masquerading:   (nat, postrouting, srcnat)
//! hostports:      [ip daddr HOSTIP] tcp dport 8080 dnat to 10.88.0.5:80 comment "ID"
//! masquerading:   ip saddr 10.88.0.5 ip daddr 10.88.0.5 masquerade comment "ID"
//!                 ip saddr 127.0.0.1 ip daddr 10.88.0.5 masquerade comment "ID"
//! ```
//!
//! Where ours departs, on purpose: an ADD keeps the handles of the rules
//! it added in a record (a log per network, `/run/cni/nft-rules/
//! <namespace>/<network>/.log`, [`OwnedRules`]) and its DEL deletes those, each
//! checked for the container's comment, without dumping `hostports` and
//! `masquerading`, which on a node hold every pod's rules (a node of
//! 1,000 pods' mappings: a 3,000-rule dump per DEL, bench/process/kind.sh).
//! Without a record (a reference ADD, a killed ADD's mark, a table made
//! again) the DEL deletes by comment, as the reference does; the
//! reference ignores the records, which our GC sweeps.
//!
//! Go: plugins `plugins/meta/portmap/portmap_nftables.go`.

use cni_netfilter::nft::{NftBackend, OwnedRules};
use cni_netfilter::{
    priority, Action, Backend, BaseChain, Chain, ChainType, CommentMatch, Family, FilterError,
    Hook, Match, Rule, Table, Transaction,
};
use cni_types::{IpFamily, IpNetwork};

use super::config::Setup;

/// The table's name in both families.
pub const TABLE: &str = "cni_hostport";
/// The chain with one DNAT rule per mapping.
pub const HOSTPORTS: &str = "hostports";
/// A chain older versions put host-IP mappings in, kept (and emptied on
/// DEL) so an upgrade is transparent.
pub const HOSTIP_HOSTPORTS: &str = "hostip_hostports";
/// The chain jumping to both of the above.
pub const HOSTPORTS_ALL: &str = "hostports_all";
/// The base chain masquerading hairpin and localhost traffic.
pub const MASQUERADING: &str = "masquerading";

/// `ip cni_hostport` or `ip6 cni_hostport`.
pub fn table(ip: IpFamily) -> Table {
    Table::new(Family::of(ip), TABLE).with_comment("CNI portmap plugin")
}

fn nat(name: &str, hook: Hook, priority: i32) -> Chain {
    Chain::base(name, BaseChain::new(ChainType::Nat, hook, priority))
}

/// ADD for one container address, in one batch: the layout (table,
/// chains, their jumps, re-laid as the reference does so new conditions
/// apply) and the container's rules.
///
/// masqAll makes one masquerading rule from every source (`0.0.0.0/0`,
/// `::/0`), as upstream does since v1.9.1 (3d27709f); v1.9.1 itself
/// ignored masqAll under nftables.
///
/// Go: `portMapperNFTables.forwardPorts`.
pub fn forward(setup: &Setup, container_id: &str, container: IpNetwork) -> Transaction {
    let ip = container.family();
    let mut tx = Transaction::new(table(ip));
    tx.ensure_table()
        .ensure_chain(Chain::new(HOSTPORTS))
        .ensure_chain(Chain::new(HOSTIP_HOSTPORTS));
    for (chain, rules) in layout(setup, ip) {
        tx.ensure_chain(chain.clone()).flush_chain(&chain.name);
        for rule in rules {
            tx.add_rule(rule);
        }
    }
    if setup.snat {
        tx.ensure_chain(nat(MASQUERADING, Hook::Postrouting, priority::SRCNAT));
    }
    container_rules(setup, container_id, container, &mut tx);
    tx
}

/// ADD as [`forward`] does it, but when the table already holds the
/// layout `forward` would lay, exactly (as the previous ADD left it), only
/// the container's rules are added: re-laying deletes rules, and a
/// process that deleted rules waits for the kernel to retire them when it
/// exits (bench/process/kind.sh). Anything else, or a batch that fails
/// because the ruleset changed since the look, gets the whole of
/// [`forward`].
pub fn forward_on(
    nft: &mut NftBackend,
    setup: &Setup,
    container_id: &str,
    container: IpNetwork,
) -> Result<(), FilterError> {
    let mut owned = owned(&setup.network, container_id);
    owned.begin()?;
    let ip = container.family();
    let table = table(ip);
    let mut laid = setup.snat.then_some(MASQUERADING).into_iter();
    let chains = nft.list_chains(&table)?;
    let mut present = [HOSTPORTS, HOSTIP_HOSTPORTS]
        .into_iter()
        .chain(&mut laid)
        .all(|name| chains.iter().any(|c| c == name));
    for (chain, rules) in layout(setup, ip) {
        present = present && nft.chain_holds(&table, &chain.name, &rules)?;
    }
    if present {
        let mut tx = Transaction::new(table);
        container_rules(setup, container_id, container, &mut tx);
        if owned.apply(nft, &tx, false).is_ok() {
            return Ok(());
        }
    }
    owned.apply(nft, &forward(setup, container_id, container), false)
}

/// The chains ADD lays afresh each time, with their rules: `hostports_all`
/// and the two base chains jumping to it.
fn layout(setup: &Setup, ip: IpFamily) -> [(Chain, Vec<Rule>); 3] {
    let conditions = setup.conditions(ip);
    let jump = |chain: &str, to: &str| Rule::new(chain).then(Action::Jump(to.into()));
    let local = |chain: &str| {
        let mut rule = Rule::new(chain);
        rule.matches.extend(conditions.iter().cloned());
        vec![rule
            .matching(Match::LocalDestination)
            .then(Action::Jump(HOSTPORTS_ALL.into()))]
    };
    [
        (
            Chain::new(HOSTPORTS_ALL),
            vec![
                jump(HOSTPORTS_ALL, HOSTIP_HOSTPORTS),
                jump(HOSTPORTS_ALL, HOSTPORTS),
            ],
        ),
        (
            nat("prerouting", Hook::Prerouting, priority::DSTNAT),
            local("prerouting"),
        ),
        (
            nat("output", Hook::Output, priority::DSTNAT),
            local("output"),
        ),
    ]
}

/// The container's own rules: its DNAT rules and its masquerading.
fn container_rules(setup: &Setup, container_id: &str, container: IpNetwork, tx: &mut Transaction) {
    let ip = container.family();
    for m in setup.mappings.iter().filter(|m| m.applies_to(ip)) {
        let mut rule = Rule::new(HOSTPORTS);
        if let Some(host_ip) = m.host_ip {
            rule = rule.matching(Match::destination(IpNetwork::host(host_ip)));
        }
        tx.add_rule(
            rule.matching(Match::Protocol(m.protocol))
                .matching(Match::DestinationPort(m.host_port))
                .then(Action::Dnat {
                    addr: container.addr(),
                    port: Some(m.container_port),
                })
                .comment(container_id),
        );
    }
    if setup.snat {
        let to_container = IpNetwork::host(container.addr());
        let masquerade = |from: IpNetwork| {
            Rule::new(MASQUERADING)
                .matching(Match::source(from))
                .matching(Match::destination(to_container))
                .then(Action::Masquerade)
                .comment(container_id)
        };
        let hairpin = match setup.masq_all {
            true => ip.any(),
            false => to_container,
        };
        tx.add_rule(masquerade(hairpin));
        if ip == IpFamily::V4 && !setup.masq_all {
            tx.add_rule(masquerade(IpNetwork::host([127, 0, 0, 1].into())));
        }
    }
}

/// CHECK for one container address: at least as many rules commented
/// with the container ID as ADD makes, in `hostports` and
/// `masquerading`.
///
/// Go: `portMapperNFTables.checkPorts`.
pub fn check(
    backend: &mut dyn Backend,
    setup: &Setup,
    container_id: &str,
    container: IpNetwork,
) -> Result<(), FilterError> {
    let ip = container.family();
    let table = table(ip);
    let host_ports = setup.mappings.iter().filter(|m| m.applies_to(ip)).count();
    let masqueradings = match (setup.snat, ip == IpFamily::V6 || setup.masq_all) {
        (false, _) => 0,
        (true, true) => 1,
        (true, false) => 2,
    };
    let mine = CommentMatch::Exact(container_id.to_string());
    for (chain, wanted) in [(HOSTPORTS, host_ports), (MASQUERADING, masqueradings)] {
        let found = match wanted {
            0 => continue,
            _ => backend.find_rules(&table, chain, &mine)?.len(),
        };
        if found < wanted {
            return Err(FilterError::Missing {
                what: format!(
                    "a hostport rule of the container in chain {chain:?} ({found} of {wanted} found)"
                ),
            });
        }
    }
    Ok(())
}

/// DEL: the container's rules in both families' tables, one batch each,
/// nothing when they are absent; a family whose rules `network`'s
/// record of the container names (all of them, each still there with
/// the container's comment) has them deleted by handle, without dumping
/// the chains; a family the record names no rule of is left alone. No
/// record, a pending one (an ADD's mark) or a rule not as recorded: by
/// comment. The record goes last.
///
/// Go: `portMapperNFTables.unforwardPorts` (by comment only).
pub fn unforward_recorded(
    nft: &mut NftBackend,
    network: &str,
    container_id: &str,
) -> Result<(), FilterError> {
    let owned = owned(network, container_id);
    for ip in IpFamily::BOTH {
        owned.delete(
            nft,
            &table(ip),
            &[HOSTPORTS, HOSTIP_HOSTPORTS, MASQUERADING],
        )?;
    }
    owned.forget();
    Ok(())
}

/// The container's rules in `network`: recorded in the network's group,
/// commented with the container ID.
fn owned(network: &str, container_id: &str) -> OwnedRules {
    let comment = CommentMatch::Exact(container_id.to_string());
    OwnedRules::here(network, container_id, container_id, comment)
}

/// GC's part here: the records of `network`'s containers that `keeps`
/// refuses (their rules stay, as the module docs say GC leaves the
/// nftables layout alone).
pub fn forget_stale_records(network: &str, keeps: impl Fn(&str) -> bool) {
    OwnedRules::forget_unkept(network, keeps);
}

#[cfg(test)]
mod tests {
    use cni_netfilter::{BackendKind, Op, Protocol};

    use super::*;
    use crate::portmap::config::Mapping;

    /// The fixture's container: ctr-1 at 10.88.0.5, snat, tcp 8080->80 and
    /// udp 192.168.1.1:5353->53.
    fn fixture_setup() -> Setup {
        Setup {
            network: "cni0".into(),
            backend: BackendKind::Nftables,
            snat: true,
            masq_all: false,
            mark: 0x2000,
            external_set_mark_chain: None,
            conditions_v4: vec![],
            conditions_v6: vec![],
            mappings: vec![
                Mapping {
                    host_port: 8080,
                    container_port: 80,
                    protocol: Protocol::Tcp,
                    host_ip: None,
                    host_family: None,
                },
                Mapping {
                    host_port: 5353,
                    container_port: 53,
                    protocol: Protocol::Udp,
                    host_ip: Some("192.168.1.1".parse().unwrap()),
                    host_family: Some(IpFamily::V4),
                },
            ],
            ipv4: Some("10.88.0.5/16".parse().unwrap()),
            ipv6: None,
        }
    }

    #[test]
    fn the_layout_is_the_reference_fixture_op_for_op() {
        let s = fixture_setup();
        let tx = forward(&s, "ctr-1", s.ipv4.unwrap());
        let rules: Vec<&Rule> = tx
            .ops()
            .iter()
            .filter_map(|op| match op {
                Op::AddRule(rule) => Some(rule),
                _ => None,
            })
            .collect();
        // add rule lines of tests/fixtures/portmap_nftables.nft, in order.
        let chains: Vec<&str> = rules.iter().map(|r| r.chain.as_str()).collect();
        assert_eq!(
            chains,
            [
                HOSTPORTS_ALL,
                HOSTPORTS_ALL,
                "prerouting",
                "output",
                HOSTPORTS,
                HOSTPORTS,
                MASQUERADING,
                MASQUERADING
            ]
        );
        assert_eq!(
            rules[5].matches,
            vec![
                Match::destination("192.168.1.1/32".parse().unwrap()),
                Match::Protocol(Protocol::Udp),
                Match::DestinationPort(5353)
            ]
        );
        assert_eq!(
            rules[7].matches[0],
            Match::source("127.0.0.1/32".parse().unwrap())
        );
        assert!(rules[4..]
            .iter()
            .all(|r| r.comment.as_deref() == Some("ctr-1")));
    }

    #[test]
    fn ipv6_has_no_localhost_rule_and_skips_ipv4_host_ips() {
        let s = fixture_setup();
        let tx = forward(&s, "ctr-1", "fd00::5/64".parse().unwrap());
        assert_eq!(tx.table().family, Family::Ip6);
        let commented = tx
            .ops()
            .iter()
            .filter(|op| matches!(op, Op::AddRule(r) if r.comment.is_some()))
            .count();
        assert_eq!(commented, 2, "the tcp mapping and the hairpin rule");
    }
}
