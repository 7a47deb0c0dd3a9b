//! Masquerading under iptables, as the reference lays it out: a chain
//! `CNI-<hash>` per network and container in the `nat` table, reached
//! from `POSTROUTING` for each container address.

use std::collections::BTreeSet;

use cni_types::IpNetwork;

use super::names::{chain_name, iptables_comment};
use super::Attachment;
use crate::iptables::{is_listed_as, IptablesBackend};
use crate::{Action, Backend, Chain, CommentMatch, Family, FilterError, Match, Rule, Table};

/// The multicast network of `net`'s family, never masqueraded.
fn multicast(net: &IpNetwork) -> IpNetwork {
    let text = if net.is_ipv4() {
        "224.0.0.0/4"
    } else {
        "ff00::/8"
    };
    text.parse().expect("a valid network")
}

fn nat(family: Family) -> Table {
    Table::new(family, "nat")
}

/// The three rules of one address, in the order the reference appends
/// them: ACCEPT to its own subnet, MASQUERADE to any non-multicast
/// destination, and POSTROUTING's jump for packets from the address.
fn rules(net: &IpNetwork, at: &Attachment) -> [Rule; 3] {
    let chain = chain_name(at.network, at.container_id);
    let comment = iptables_comment(at.network, at.container_id);
    let host = IpNetwork::new(net.addr(), if net.is_ipv4() { 32 } else { 128 })
        .expect("a full-length prefix fits");
    [
        Rule::new(chain.clone())
            .matching(Match::destination(*net))
            .then(Action::Accept)
            .comment(comment.clone()),
        Rule::new(chain.clone())
            .matching(Match::not_destination(multicast(net)))
            .then(Action::Masquerade)
            .comment(comment.clone()),
        Rule::new("POSTROUTING")
            .matching(Match::source(host))
            .then(Action::Jump(chain))
            .comment(comment),
    ]
}

/// The addresses of one family.
fn of_family(addresses: &[IpNetwork], family: Family) -> Vec<IpNetwork> {
    addresses
        .iter()
        .filter(|a| family.carries(!a.is_ipv4()))
        .copied()
        .collect()
}

/// Ensures the chain and each address's rules, appending only those not
/// there already (go-iptables' `AppendUnique`); one `iptables-save` and
/// one `iptables-restore` per family (the transaction's ensured rules are
/// checked against the listing it makes anyway). Where the table names
/// neither the chain nor the comment ([`crate::iptables::may_mention`]:
/// a new attachment), nothing of it can be there and the restore runs
/// without the listing.
///
/// Go: plugins `ip.setupIPMasqIPTables`.
pub(super) fn setup(addresses: &[IpNetwork], at: &Attachment) -> Result<(), FilterError> {
    let mut backend = IptablesBackend::new();
    let chain = chain_name(at.network, at.container_id);
    let comment = iptables_comment(at.network, at.container_id);
    for family in [Family::Ip, Family::Ip6] {
        let mine = of_family(addresses, family);
        if mine.is_empty() {
            continue;
        }
        let mut tx = crate::Transaction::new(nat(family));
        tx.ensure_chain(Chain::new(chain.clone()));
        for net in &mine {
            for rule in rules(net, at) {
                tx.ensure_rule(rule);
            }
        }
        let needles = [chain.as_bytes(), comment.as_bytes()];
        if crate::iptables::may_mention(family, "nat", &needles) {
            backend.apply(&tx)?;
        } else {
            backend.apply_to_absent(&tx)?;
        }
    }
    Ok(())
}

/// The rules of the attachment's chain and of POSTROUTING.
fn listed(
    backend: &mut IptablesBackend,
    family: Family,
    chain: &str,
) -> Result<Vec<crate::ListedRule>, FilterError> {
    let mut rules = backend.list_rules(&nat(family), chain)?;
    rules.extend(backend.list_rules(&nat(family), "POSTROUTING")?);
    Ok(rules)
}

/// Whether `listed` holds `rule` (go-iptables' `Exists`).
fn contains(
    listed: &[crate::ListedRule],
    rule: &Rule,
    family: Family,
) -> Result<bool, FilterError> {
    for l in listed {
        if is_listed_as(rule, family, l)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Removes POSTROUTING's jumps to the attachment's chain (found by their
/// comment, so the addresses are not needed) and the chain, in the
/// families of `addresses`, both when there are none.
///
/// Go: plugins `ip.teardownIPMasqIPTables`, which deletes the jumps of
/// the addresses it is given.
pub(super) fn teardown(addresses: &[IpNetwork], at: &Attachment) -> Result<(), FilterError> {
    let mut families: BTreeSet<u8> = addresses.iter().map(|a| u8::from(!a.is_ipv4())).collect();
    if families.is_empty() {
        families.extend([0, 1]);
    }
    let chain = chain_name(at.network, at.container_id);
    let comment = iptables_comment(at.network, at.container_id);
    let teardown = |v6: u8| {
        let family = if v6 == 1 { Family::Ip6 } else { Family::Ip };
        // The jumps name the chain; where the table has neither, there is
        // nothing to list or delete (a masquerading under nftables, a
        // second DEL).
        let needles = [chain.as_bytes(), comment.as_bytes()];
        if !crate::iptables::may_mention(family, "nat", &needles) {
            return Ok(());
        }
        let mut tx = crate::Transaction::new(nat(family));
        tx.delete_rules_by_comment("POSTROUTING", CommentMatch::Exact(comment.clone()))
            .delete_chain(chain.clone());
        IptablesBackend::new().apply(&tx)
    };
    // The families at once, each its own save and restore under its own
    // lock: DEL waits for the slower, not for both. The first family's
    // error is the one reported.
    std::thread::scope(|scope| {
        let torn: Vec<_> = families
            .into_iter()
            .map(|v6| scope.spawn(move || teardown(v6)))
            .collect();
        torn.into_iter()
            .map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect::<Result<Vec<()>, FilterError>>()
            .map(drop)
    })
}

/// The first rule of the attachment's addresses that is missing.
pub(super) fn check(addresses: &[IpNetwork], at: &Attachment) -> Result<(), FilterError> {
    let mut backend = IptablesBackend::new();
    let chain = chain_name(at.network, at.container_id);
    for family in [Family::Ip, Family::Ip6] {
        let mine = of_family(addresses, family);
        if mine.is_empty() {
            continue;
        }
        let listed = listed(&mut backend, family, &chain)?;
        for net in &mine {
            for rule in rules(net, at) {
                if !contains(&listed, &rule, family)? {
                    return Err(FilterError::Missing {
                        what: format!("the iptables rule for {net} in {}", rule.chain),
                    });
                }
            }
        }
    }
    Ok(())
}
