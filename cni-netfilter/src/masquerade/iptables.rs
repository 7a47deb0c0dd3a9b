//! Masquerading under iptables, as the reference lays it out: a chain
//! `CNI-<hash>` per network and container in the `nat` table, reached
//! from `POSTROUTING` for each container address.

use std::collections::BTreeSet;

use cni_types::{IpNetwork, ValidAttachments};

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
    let host = IpNetwork::host(net.addr());
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
        .filter(|a| family.carries(a.family()))
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
    // Both families when there are no addresses.
    let families = [Family::Ip, Family::Ip6]
        .into_iter()
        .filter(|f| addresses.is_empty() || addresses.iter().any(|a| f.carries(a.family())));
    let chain = chain_name(at.network, at.container_id);
    let comment = iptables_comment(at.network, at.container_id);
    // First what needs no process, on this thread and the process's one
    // netfilter socket (a thread's would be a second socket released, and
    // each release waits for the namespace's pending deletions: see
    // `NftBackend::open`). The jumps name the chain; where the table has
    // neither, there is nothing to list or delete (a masquerading under
    // nftables, a second DEL). On iptables-nft, one nf_tables batch:
    // POSTROUTING's rules that jump to the chain (ours and the
    // reference's carry the comment and jump to it), and the chain.
    // What is left needs the commands.
    let needles = [chain.as_bytes(), comment.as_bytes()];
    let mut left = Vec::new();
    for family in families {
        if !crate::iptables::may_mention(family, "nat", &needles) {
            continue;
        }
        let direct =
            IptablesBackend::new().remove_chains_directly(&nat(family), &[(&chain, "POSTROUTING")]);
        if !matches!(direct, Ok(true)) {
            left.push(family);
        }
    }
    let teardown = |family: Family| {
        let mut tx = crate::Transaction::new(nat(family));
        tx.delete_rules_by_comment("POSTROUTING", CommentMatch::Exact(comment.clone()))
            .delete_chain(chain.clone());
        IptablesBackend::new().apply(&tx)
    };
    match left.as_slice() {
        [] => Ok(()),
        [family] => teardown(*family),
        // The families at once, each its own save and restore under its
        // own lock: DEL waits for the slower, not for both. The first
        // family's error is the one reported.
        families => std::thread::scope(|scope| {
            let torn: Vec<_> = families
                .iter()
                .map(|&family| scope.spawn(move || teardown(family)))
                .collect();
            torn.into_iter()
                .map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect::<Result<Vec<()>, FilterError>>()
                .map(drop)
        }),
    }
}

/// Removes the masquerading of `network`'s attachments whose container
/// `valid` does not keep (nothing when it is unspecified), in both
/// families: POSTROUTING's jumps and the `CNI-<hash>` chains whose rules'
/// comment ([`iptables_comment`]) names the network and another
/// container. The comment has no interface, so a container is kept while
/// any of its attachments is listed. One `iptables-save` and at most one
/// `iptables-restore` per family.
///
/// Go: none; the reference's `ip.GCIPMasqForNetwork` collects only its
/// nftables rules.
pub(super) fn gc(network: &str, valid: &ValidAttachments) -> Result<(), FilterError> {
    let ValidAttachments::List(list) = valid else {
        return Ok(());
    };
    let ours = iptables_comment(network, "");
    // `name: "NET" id: ` and the quoted container id.
    let ours = &ours[..ours.len() - 2];
    let kept: Vec<String> = list
        .iter()
        .map(|a| iptables_comment(network, &a.container_id))
        .collect();
    let stale = |comment: Option<&str>| {
        comment.is_some_and(|c| c.starts_with(ours) && !kept.iter().any(|k| k == c))
    };
    for family in [Family::Ip, Family::Ip6] {
        if !crate::iptables::may_mention(family, "nat", &[ours.as_bytes()]) {
            continue;
        }
        IptablesBackend::new().apply_listed(&nat(family), |saved| {
            let mut tx = crate::Transaction::new(nat(family));
            let mut chains = BTreeSet::new();
            for rule in saved.rules.iter().filter(|r| stale(r.comment.as_deref())) {
                if rule.chain == "POSTROUTING" {
                    tx.delete_rule(rule.clone());
                    // The chain it jumps to, even when the chain's own
                    // rules are gone already.
                    if let Some(target) = jump_target(rule) {
                        chains.insert(target);
                    }
                } else if rule.chain.starts_with("CNI-") {
                    chains.insert(rule.chain.clone());
                }
            }
            for chain in chains {
                tx.delete_chain(chain);
            }
            tx
        })?;
    }
    Ok(())
}

/// The `CNI-` chain a listed POSTROUTING rule jumps to.
fn jump_target(rule: &crate::ListedRule) -> Option<String> {
    let words = crate::iptables::listed_words(rule);
    let at = words.iter().position(|w| w == "-j")?;
    words.get(at + 1).filter(|c| c.starts_with("CNI-")).cloned()
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
