//! Masquerading under nftables, as the reference lays it out: the table
//! `inet cni_plugins_masquerade`, a `postrouting` base chain that skips
//! multicast and goes to `masq_checks`, where each attachment has one rule
//! per address, found again by its comment's hashes.

use cni_types::{IpNetwork, ValidAttachments};

use super::names::{instance_hash, network_hash, nft_comment};
use super::Attachment;
use crate::nft::{NftBackend, OwnedRules};
use crate::{
    priority, Action, Backend, BaseChain, Chain, ChainType, CommentMatch, FilterError, Hook, Match,
    Rule, Table, Transaction,
};

/// The table's name.
pub const TABLE: &str = "cni_plugins_masquerade";
/// The chain of the per-address rules.
pub const CHECKS: &str = "masq_checks";
/// The records' name for this layout ([`attachment_rules`]).
const LAYOUT: &str = "masquerade";

/// The reference's table, with its comment.
pub fn table() -> Table {
    Table::new(crate::Family::Inet, TABLE)
        .with_comment("Masquerading for plugins from github.com/containernetworking/plugins")
}

/// Ensures the table and its chains, replaces the attachment's stale rules
/// and adds one per address: from the address to outside its subnet,
/// masquerade. One batch.
///
/// The reference flushes `postrouting` and writes its three rules again on
/// every ADD. Where the chain already holds exactly those rules, the batch
/// leaves it alone: the result is the same, and a batch that deletes rules
/// makes the process wait for the kernel to retire them when it closes its
/// socket (milliseconds per ADD, bench/process/podman.sh).
///
/// Go: plugins `ip.setupIPMasqNFTablesWithInterface`.
pub(super) fn setup(addresses: &[IpNetwork], at: &Attachment) -> Result<(), FilterError> {
    let comment = nft_comment(at);
    let mut owned = attachment_rules(LAYOUT, at);
    owned.begin()?;
    let mut nft = NftBackend::open()?;
    let mut tx = Transaction::new(table());
    let postrouting = BaseChain::new(ChainType::Nat, Hook::Postrouting, priority::SRCNAT);
    tx.ensure_table()
        .ensure_chain(Chain::new(CHECKS).with_comment(
            "Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet",
        ))
        .ensure_chain(Chain::base("postrouting", postrouting));
    let entry = postrouting_rules();
    if !nft.chain_holds(&table(), "postrouting", &entry)? {
        tx.flush_chain("postrouting");
        for rule in entry {
            tx.add_rule(rule);
        }
    }
    owned.delete_earlier(&mut nft, &mut tx, &[CHECKS])?;
    for net in addresses {
        let subnet = net.subnet();
        let host = IpNetwork::host(net.addr());
        tx.add_rule(
            Rule::new(CHECKS)
                .matching(Match::source(host))
                .matching(Match::not_destination(subnet))
                .then(Action::Masquerade)
                .comment(comment.clone()),
        );
    }
    owned.apply(&mut nft, &tx, true)
}

/// `postrouting`'s rules, as the reference writes them: multicast
/// returns, the rest goes to [`CHECKS`].
fn postrouting_rules() -> [Rule; 3] {
    let multicast = |net: &str| {
        Rule::new("postrouting")
            .matching(Match::destination(net.parse().expect("a valid network")))
            .then(Action::Return)
    };
    [
        multicast("224.0.0.0/4"),
        multicast("ff00::/8"),
        Rule::new("postrouting").then(Action::Goto(CHECKS.into())),
    ]
}

/// Deletes the attachment's rules, if any.
///
/// Go: plugins `ip.teardownIPMasqNFTablesWithInterface`.
pub(super) fn teardown(at: &Attachment) -> Result<(), FilterError> {
    let owned = attachment_rules(LAYOUT, at);
    owned.delete(&mut NftBackend::open()?, &table(), &[CHECKS])?;
    owned.forget();
    Ok(())
}

/// Fails unless the attachment has a rule per address and the chains
/// that reach them exist.
pub(super) fn check(addresses: &[IpNetwork], at: &Attachment) -> Result<(), FilterError> {
    let mut nft = NftBackend::open()?;
    let chains = nft.list_chains(&table())?;
    for chain in ["postrouting", CHECKS] {
        if !chains.iter().any(|c| c == chain) {
            return Err(FilterError::Missing {
                what: format!("the nftables chain inet {TABLE} {chain}"),
            });
        }
    }
    let comment = CommentMatch::Exact(nft_comment(at));
    let found = nft.find_rules(&table(), CHECKS, &comment)?.len();
    if found < addresses.len() {
        return Err(FilterError::Missing {
            what: format!(
                "{} of the {} nftables rules of {} in inet {TABLE} {CHECKS}",
                addresses.len() - found,
                addresses.len(),
                at.container_id
            ),
        });
    }
    Ok(())
}

/// Deletes the rules of `network`'s attachments that `valid` does not
/// keep; nothing when it is unspecified.
///
/// Go: plugins `ip.gcIPMasqNFTablesWithInterface`.
pub(super) fn gc(network: &str, valid: &ValidAttachments) -> Result<(), FilterError> {
    let ValidAttachments::List(list) = valid else {
        return Ok(());
    };
    forget_unkept_records(LAYOUT, network, list);
    let mut nft = NftBackend::open()?;
    let mut tx = Transaction::new(table());
    for rule in unkept_rules(&mut nft, &table(), CHECKS, network, list)? {
        tx.delete_rule(rule);
    }
    if tx.is_empty() {
        return Ok(());
    }
    nft.apply(&tx)
}

/// The rules of `chain` that carry the comment of one of `network`'s
/// attachments ([`nft_comment`]) but of none in `kept`: what a GC
/// removes.
pub(crate) fn unkept_rules(
    nft: &mut NftBackend,
    table: &Table,
    chain: &str,
    network: &str,
    kept: &[cni_types::Attachment],
) -> Result<Vec<crate::ListedRule>, FilterError> {
    let ours = CommentMatch::Prefix(network_hash(network));
    let kept: Vec<String> = kept
        .iter()
        .map(|a| {
            nft_comment(&Attachment {
                network,
                ifname: &a.ifname,
                container_id: &a.container_id,
            })
        })
        .collect();
    let mut rules = nft.find_rules(table, chain, &ours)?;
    rules.retain(|rule| !rule.comment.as_ref().is_some_and(|c| kept.contains(c)));
    Ok(rules)
}

/// An attachment's rules under `layout` (`"masquerade"`, `"firewall"`):
/// each commented [`nft_comment`], recorded in the group
/// `LAYOUT:NETWORK` under the attachment's [`instance_hash`] (a network
/// name has no `:`, so no portmap group is one of these), found by that
/// hash when the record cannot say. The reference keeps no record: it
/// finds them by the hash alone, with a dump of the chain.
pub(crate) fn attachment_rules(layout: &str, at: &Attachment) -> OwnedRules {
    let hash = instance_hash(at);
    let group = format!("{layout}:{}", at.network);
    OwnedRules::here(
        &group,
        &hash,
        nft_comment(at),
        CommentMatch::Prefix(hash.clone()),
    )
}

/// GC: forgets the records of `network`'s attachments under `layout`
/// that `kept` does not list.
pub(crate) fn forget_unkept_records(layout: &str, network: &str, kept: &[cni_types::Attachment]) {
    let kept: Vec<String> = (kept.iter())
        .map(|a| {
            instance_hash(&Attachment {
                network,
                ifname: &a.ifname,
                container_id: &a.container_id,
            })
        })
        .collect();
    OwnedRules::forget_unkept(&format!("{layout}:{network}"), |owner| {
        kept.iter().any(|k| k == owner)
    });
}
