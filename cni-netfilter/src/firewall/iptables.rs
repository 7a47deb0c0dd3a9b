//! The reference's firewall under iptables: `CNI-FORWARD` and the admin
//! chain for the container's addresses, the isolation chains for its
//! bridge, in the `filter` table of each family it has addresses in.

use cni_types::IpNetwork;

use super::{IngressPolicy, Rules, FORWARD_CHAIN, STAGE_1, STAGE_2};
use crate::iptables::{is_listed_as, listed_words, IptablesBackend};
use crate::nft::NftBackend;
use crate::{
    Action, Backend, Chain, CtState, Family, FilterError, Match, Op, Rule, Table, Transaction,
};

/// The comment of `FORWARD`'s jump to `CNI-FORWARD`.
const RULES_COMMENT: &str = "CNI firewall plugin rules";
/// The comment of `CNI-FORWARD`'s jump to the admin chain.
const ADMIN_COMMENT: &str = "CNI firewall plugin admin overrides";
/// The comment of the isolation rules both policies share.
const ISOLATION_COMMENT: &str = "CNI firewall plugin rules (ingressPolicy: same-bridge|isolated)";
/// The comment those rules have when an older reference (1.1.1, which
/// Debian ships and which knows only `same-bridge`) added them: a rule
/// with it counts as ours, so a bridge is not isolated twice.
const LEGACY_ISOLATION_COMMENT: &str = "CNI firewall plugin rules (ingressPolicy: same-bridge)";

fn filter(family: Family) -> Table {
    Table::new(family, "filter")
}

/// The comment of a stage 1 rule of one policy.
fn policy_comment(policy: IngressPolicy) -> String {
    format!("CNI firewall plugin rules (ingressPolicy: {policy})")
}

/// The families `addresses` has, each with its addresses, IPv4 first.
fn by_family(addresses: &[IpNetwork]) -> Vec<(Family, Vec<IpNetwork>)> {
    [Family::Ip, Family::Ip6]
        .into_iter()
        .map(|family| {
            let mine: Vec<_> = addresses
                .iter()
                .filter(|a| family.carries(a.family()))
                .copied()
                .collect();
            (family, mine)
        })
        .filter(|(_, mine)| !mine.is_empty())
        .collect()
}

/// An address's two rules in `CNI-FORWARD`: replies to it, and anything
/// from it.
///
/// Go: plugins firewall `getPrivChainRules`.
fn address_rules(net: &IpNetwork) -> [Rule; 2] {
    [
        Rule::new(FORWARD_CHAIN)
            .matching(Match::destination(IpNetwork::host(net.addr())))
            .matching(Match::CtState(vec![CtState::Related, CtState::Established]))
            .then(Action::Accept),
        Rule::new(FORWARD_CHAIN)
            .matching(Match::source(IpNetwork::host(net.addr())))
            .then(Action::Accept),
    ]
}

/// `FORWARD`'s jump to `CNI-FORWARD` and its jump to the admin chain.
///
/// Go: plugins firewall `generateFilterRule`, `generateAdminRule`.
fn entry_rules(admin_chain: &str) -> [Rule; 2] {
    [
        Rule::new("FORWARD")
            .comment(RULES_COMMENT)
            .then(Action::Jump(FORWARD_CHAIN.into())),
        Rule::new(FORWARD_CHAIN)
            .comment(ADMIN_COMMENT)
            .then(Action::Jump(admin_chain.into())),
    ]
}

/// A stage 1 rule for packets in from `bridge`: going out elsewhere
/// (`out_negate`) or back out of it.
fn stage_1(bridge: &str, out_negate: bool, comment: String, action: Action) -> Rule {
    Rule::new(STAGE_1)
        .matching(Match::InInterface {
            name: bridge.into(),
            negate: false,
        })
        .matching(Match::OutInterface {
            name: bridge.into(),
            negate: out_negate,
        })
        .comment(comment)
        .then(action)
}

fn stage_1_jump(bridge: &str, policy: IngressPolicy) -> Rule {
    stage_1(
        bridge,
        true,
        policy_comment(policy),
        Action::Jump(STAGE_2.into()),
    )
}

fn stage_1_drop(bridge: &str) -> Rule {
    stage_1(
        bridge,
        false,
        policy_comment(IngressPolicy::Isolated),
        Action::Drop,
    )
}

fn stage_2_drop(bridge: &str) -> Rule {
    Rule::new(STAGE_2)
        .matching(Match::OutInterface {
            name: bridge.into(),
            negate: false,
        })
        .comment(ISOLATION_COMMENT)
        .then(Action::Drop)
}

fn isolation_return(chain: &str) -> Rule {
    Rule::new(chain)
        .comment(ISOLATION_COMMENT)
        .then(Action::Return)
}

/// The isolation of `bridge`, in the reference's order: each rule added
/// unless there (at the top, or appended for the `RETURN`s), so its
/// jumps come before `CNI-FORWARD`'s and its drops before the `RETURN`s.
///
/// Go: plugins firewall `setupIsolationChains`.
fn isolation(bridge: &str, policy: IngressPolicy) -> Vec<(Rule, bool)> {
    let mut rules = vec![
        (
            Rule::new("FORWARD")
                .comment(ISOLATION_COMMENT)
                .then(Action::Jump(STAGE_1.into())),
            true,
        ),
        (stage_1_jump(bridge, policy), true),
    ];
    if policy == IngressPolicy::Isolated {
        rules.push((stage_1_drop(bridge), true));
    }
    rules.extend([
        (isolation_return(STAGE_1), false),
        (stage_2_drop(bridge), true),
        (isolation_return(STAGE_2), false),
    ]);
    rules
}

/// The rule as the older reference wrote it, when its comment differs.
fn legacy(rule: &Rule) -> Option<Rule> {
    (rule.comment.as_deref() == Some(ISOLATION_COMMENT))
        .then(|| rule.clone().comment(LEGACY_ISOLATION_COMMENT))
}

/// Adds the isolation of `bridge` to `tx`, but for the rules whose older
/// twin `table` holds.
fn isolate(
    backend: &mut IptablesBackend,
    tx: &mut Transaction,
    bridge: &str,
    policy: IngressPolicy,
) -> Result<(), FilterError> {
    let rules = isolation(bridge, policy);
    let twins: Vec<Rule> = rules.iter().filter_map(|(r, _)| legacy(r)).collect();
    let missing = backend.missing_rules(tx.table(), &twins)?;
    let present: Vec<Rule> = twins
        .iter()
        .filter(|t| !missing.contains(t))
        .cloned()
        .collect();
    tx.ensure_chain(Chain::new(STAGE_1))
        .ensure_chain(Chain::new(STAGE_2));
    for (rule, first) in rules {
        if !legacy(&rule).is_some_and(|twin| present.contains(&twin)) {
            tx.push(Op::EnsureRule { rule, first });
        }
    }
    Ok(())
}

/// Every rule that names `bridge`, whichever policy added it.
fn bridge_rules(bridge: &str) -> [Rule; 5] {
    let drop = stage_2_drop(bridge);
    let legacy_drop = drop.clone().comment(LEGACY_ISOLATION_COMMENT);
    [
        stage_1_jump(bridge, IngressPolicy::SameBridge),
        stage_1_jump(bridge, IngressPolicy::Isolated),
        stage_1_drop(bridge),
        drop,
        legacy_drop,
    ]
}

/// Ensures the chains, the jumps and each address's rules, then the
/// bridge's isolation: one `iptables-restore` per family.
///
/// Go: plugins firewall `iptablesBackend.Add`, `setupIngressPolicy`.
pub(super) fn add(rules: &Rules, bridge: Option<&str>) -> Result<(), FilterError> {
    let mut backend = IptablesBackend::new();
    for (family, mine) in by_family(rules.addresses) {
        let mut tx = Transaction::new(filter(family));
        tx.ensure_chain(Chain::new(FORWARD_CHAIN))
            .ensure_chain(Chain::new(rules.admin_chain));
        for rule in entry_rules(rules.admin_chain) {
            tx.push(Op::EnsureRule { rule, first: true });
        }
        for net in &mine {
            for rule in address_rules(net) {
                tx.ensure_rule(rule);
            }
        }
        if let Some(bridge) = bridge {
            isolate(&mut backend, &mut tx, bridge, rules.policy)?;
        }
        backend.apply(&tx)?;
    }
    Ok(())
}

/// Fails naming the first chain or rule of the attachment that is
/// missing.
///
/// Go: plugins firewall `iptablesBackend.Check`.
pub(super) fn check(rules: &Rules, bridge: Option<&str>) -> Result<(), FilterError> {
    let mut backend = IptablesBackend::new();
    for (family, mine) in by_family(rules.addresses) {
        let table = filter(family);
        let chains = backend.list_chains(&table)?;
        for chain in [FORWARD_CHAIN, rules.admin_chain] {
            if !chains.iter().any(|c| c == chain) {
                return Err(FilterError::Missing {
                    what: format!("the {family} filter chain {chain}"),
                });
            }
        }
        let mut wanted: Vec<Rule> = entry_rules(rules.admin_chain).into();
        wanted.extend(mine.iter().flat_map(address_rules));
        if let Some(bridge) = bridge {
            wanted.push(stage_1_jump(bridge, rules.policy));
            if rules.policy == IngressPolicy::Isolated {
                wanted.push(stage_1_drop(bridge));
            }
            wanted.push(stage_2_drop(bridge));
        }
        let missing = backend.missing_rules(&table, &wanted)?;
        let twins: Vec<Rule> = missing.iter().filter_map(|r| legacy(r)).collect();
        let twins_missing = backend.missing_rules(&table, &twins)?;
        let lacking = missing
            .iter()
            .find(|r| legacy(r).is_none_or(|twin| twins_missing.contains(&&twin)));
        if let Some(rule) = lacking {
            return Err(FilterError::Missing {
                what: format!("the {family} filter rule {rule:?}"),
            });
        }
    }
    Ok(())
}

/// Removes each address's rules and, given a bridge, its isolation rules
/// (in both families when there are no addresses).
///
/// Go: plugins firewall `iptablesBackend.Del`.
pub(super) fn del(addresses: &[IpNetwork], bridge: Option<&str>) -> Result<(), FilterError> {
    // A wildcard name was never written by this layout (`add` refuses it).
    let bridge = bridge.filter(|b| crate::iptables::literal_ifname(b).is_ok());
    let mut families = by_family(addresses);
    if families.is_empty() && bridge.is_some() {
        families = vec![(Family::Ip, Vec::new()), (Family::Ip6, Vec::new())];
    }
    let mut backend = IptablesBackend::new();
    for (family, mine) in families {
        // Each doomed rule names one of these: where the table names none,
        // there is nothing to list or delete (most DELs of a bridge without
        // isolation, every ADD's look for a previous network's rules).
        let octets: Vec<Vec<u8>> = mine.iter().map(|net| octets(net.addr())).collect();
        let mut needles: Vec<&[u8]> = octets.iter().map(Vec::as_slice).collect();
        needles.extend(bridge.map(str::as_bytes));
        let named = crate::iptables::may_mention_each(family, "filter", &needles);
        if !named.contains(&true) {
            continue;
        }
        // Only isolation rules name the bridge; the address rules do not.
        let bridge_named = bridge.is_some() && named.last() == Some(&true);
        let mut doomed: Vec<Rule> = mine.iter().flat_map(address_rules).collect();
        if !doomed.is_empty() && backend.delete_expected(&filter(family), &doomed)? {
            // The usual DEL: the address's rules are there, as its ADD
            // wrote them; no listing.
            doomed.clear();
        }
        if let Some(bridge) = bridge {
            // A bridge's isolation rules depend on the policy that added
            // them, so those are listed, where the table names the bridge
            // (the last container of a bridge without isolation: not).
            if !doomed.is_empty() || bridge_named {
                doomed.extend(bridge_rules(bridge));
            }
        }
        if !doomed.is_empty() {
            delete_present(&mut backend, family, &doomed)?;
        }
    }
    Ok(())
}

/// Whether either family's isolation chains may name `bridge`: where
/// iptables-legacy holds the filter table (which only `iptables-save`
/// could tell), or where an error hides the answer, yes; under
/// iptables-nft, from a dump of each stage's chain alone.
pub(super) fn may_isolate(bridge: &str) -> bool {
    [Family::Ip, Family::Ip6].into_iter().any(|family| {
        crate::iptables::legacy_may_hold(family, "filter")
            || NftBackend::open()
                .and_then(|mut nft| {
                    nft.chains_mention(&filter(family), &[STAGE_1, STAGE_2], bridge.as_bytes())
                })
                .unwrap_or(true)
    })
}

/// An address as its bytes, as a rule matching it carries them.
fn octets(ip: std::net::IpAddr) -> Vec<u8> {
    match ip {
        std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
        std::net::IpAddr::V6(v6) => v6.octets().to_vec(),
    }
}

/// Deletes those of `doomed` that `family`'s filter table holds, from one
/// `iptables-save` of the table (not one per chain) and one
/// `iptables-restore` when there is something to delete. A rule that
/// cannot be rendered is an error and nothing is deleted.
fn delete_present(
    backend: &mut IptablesBackend,
    family: Family,
    doomed: &[Rule],
) -> Result<(), FilterError> {
    let table = filter(family);
    let mut failure = None;
    backend.apply_listed(&table, |saved| {
        failure = None;
        let mut tx = Transaction::new(table.clone());
        for listed in &saved.rules {
            for rule in doomed.iter().filter(|r| r.chain == listed.chain) {
                match is_listed_as(rule, family, listed) {
                    Ok(false) => {}
                    Ok(true) => {
                        tx.delete_rule(listed.clone());
                        break;
                    }
                    Err(e) => {
                        failure = Some(e);
                        return Transaction::new(table.clone());
                    }
                }
            }
        }
        tx
    })?;
    failure.map_or(Ok(()), Err)
}

/// Removes the isolation rules of bridges that no longer exist, in both
/// families.
pub(super) fn gc_bridges(bridge_exists: &dyn Fn(&str) -> bool) -> Result<(), FilterError> {
    let mut backend = IptablesBackend::new();
    for family in [Family::Ip, Family::Ip6] {
        let table = filter(family);
        let mut gone: Vec<String> = Vec::new();
        for rule in backend.list_rules(&table, STAGE_2)? {
            let words = listed_words(&rule);
            let named = words
                .windows(2)
                .find(|w| w[0] == "-o")
                .map(|w| w[1].clone());
            let named = named.filter(|b| crate::iptables::literal_ifname(b).is_ok());
            if let Some(bridge) = named.filter(|b| !bridge_exists(b)) {
                gone.push(bridge);
            }
        }
        let doomed: Vec<Rule> = gone.iter().flat_map(|b| bridge_rules(b)).collect();
        delete_present(&mut backend, family, &doomed)?;
    }
    Ok(())
}
