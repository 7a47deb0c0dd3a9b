//! The firewall under nftables, in a table of our own (the reference has
//! no nftables backend): the module docs give the layout.

use cni_types::{IpNetwork, ValidAttachments};

use super::{IngressPolicy, Rules};
use crate::masquerade::names::nft_comment;
use crate::masquerade::nftables::{attachment_rules, forget_unkept_records, unkept_rules};
use crate::masquerade::Attachment;
use crate::nft::NftBackend;
use crate::{
    priority, Action, Backend, BaseChain, Chain, ChainType, CommentMatch, CtState, FilterError,
    Hook, Match, Rule, Table, Transaction,
};

/// The table's name.
pub const TABLE: &str = "cni_plugins_firewall";
const FORWARD: &str = "forward";
const ADMIN: &str = "admin";
const ACCEPTS: &str = "cni_forward";
const STAGE_1: &str = "isolation_stage_1";
const STAGE_2: &str = "isolation_stage_2";
/// The records' name for this layout.
const LAYOUT: &str = "firewall";

/// Our table, `inet cni_plugins_firewall`, with its comment.
pub fn table() -> Table {
    Table::new(crate::Family::Inet, TABLE).with_comment("CNI firewall plugin (cni-rs)")
}

/// The comment of the rules that isolate `bridge` from the others.
fn bridge_comment(bridge: &str) -> String {
    format!("ingressPolicy same-bridge|isolated: {bridge}")
}

/// The comment of the rule that isolates `bridge`'s ports from each other.
fn isolated_comment(bridge: &str) -> String {
    format!("ingressPolicy isolated: {bridge}")
}

fn iif(bridge: &str) -> Match {
    Match::InInterface {
        name: bridge.into(),
        negate: false,
    }
}

fn oif(bridge: &str, negate: bool) -> Match {
    Match::OutInterface {
        name: bridge.into(),
        negate,
    }
}

/// The attachment's two rules per address, with its comment.
fn address_rules(net: &IpNetwork, at: &Attachment) -> [Rule; 2] {
    let comment = nft_comment(at);
    [
        Rule::new(ACCEPTS)
            .matching(Match::destination(IpNetwork::host(net.addr())))
            .matching(Match::CtState(vec![CtState::Established, CtState::Related]))
            .then(Action::Accept)
            .comment(comment.clone()),
        Rule::new(ACCEPTS)
            .matching(Match::source(IpNetwork::host(net.addr())))
            .then(Action::Accept)
            .comment(comment),
    ]
}

/// The rules that isolate `bridge` under `policy`.
fn isolation_rules(bridge: &str, policy: IngressPolicy) -> Vec<Rule> {
    let mut rules = vec![
        Rule::new(STAGE_1)
            .matching(iif(bridge))
            .matching(oif(bridge, true))
            .then(Action::Jump(STAGE_2.into()))
            .comment(bridge_comment(bridge)),
        Rule::new(STAGE_2)
            .matching(oif(bridge, false))
            .then(Action::Drop)
            .comment(bridge_comment(bridge)),
    ];
    if policy == IngressPolicy::Isolated {
        rules.push(
            Rule::new(STAGE_1)
                .matching(iif(bridge))
                .matching(oif(bridge, false))
                .then(Action::Drop)
                .comment(isolated_comment(bridge)),
        );
    }
    rules
}

/// What `forward` holds: its jumps to the isolation chains, the admin's
/// chain and the per-address accepts, the last for unicast packets only.
///
/// Why only unicast: a packet that reaches that jump is accepted by our
/// table whatever `cni_forward` says (its rules accept, and `forward`'s
/// policy is accept), so the walk through two rules per container
/// address decides nothing. On a bridge every multicast packet (the
/// neighbour solicitations and listener reports of each new link) is
/// flooded to every port, and the kernel's bridge filtering runs the
/// forward hook once per port: a burst of 100 pods walked those rules
/// ten million times, 40 ms of a 100-pod ADD burst here (BENCHMARKS.md).
fn forward_rules() -> [Rule; 3] {
    let jump = |to: &str| Rule::new(FORWARD).then(Action::Jump(to.into()));
    [
        jump(STAGE_1),
        jump(ADMIN),
        jump(ACCEPTS).matching(Match::Unicast),
    ]
}

/// Ensures the table and chains, writes `forward` again unless it holds
/// its three jumps already, replaces the
/// attachment's rules, and adds the bridge's isolation rules that are
/// missing (a bridge may carry networks of both policies, as under
/// iptables). One batch.
pub(super) fn add(rules: &Rules, bridge: Option<&str>) -> Result<(), FilterError> {
    let at = &rules.attachment;
    let mut owned = attachment_rules(LAYOUT, at);
    owned.begin()?;
    let mut nft = NftBackend::open()?;
    let mut tx = Transaction::new(table());
    let forward = BaseChain::new(ChainType::Filter, Hook::Forward, priority::FILTER);
    tx.ensure_table()
        .ensure_chain(Chain::new(ADMIN).with_comment("Rules of the administrator, run first"))
        .ensure_chain(Chain::new(STAGE_1))
        .ensure_chain(Chain::new(STAGE_2))
        .ensure_chain(Chain::new(ACCEPTS))
        .ensure_chain(Chain::base(FORWARD, forward));
    // Written again only when it differs: a flush deletes rules, and the
    // process then waits for the kernel to retire them when it closes its
    // socket (see `NftBackend::chain_holds`).
    let jumps = forward_rules();
    if !nft.chain_holds(&table(), FORWARD, &jumps)? {
        tx.flush_chain(FORWARD);
        for rule in jumps {
            tx.add_rule(rule);
        }
    }
    owned.delete_earlier(&mut nft, &mut tx, &[ACCEPTS])?;
    for net in rules.addresses {
        for rule in address_rules(net, at) {
            tx.add_rule(rule);
        }
    }
    if let Some(bridge) = bridge {
        for rule in isolation_rules(bridge, rules.policy) {
            let comment = CommentMatch::Exact(rule.comment.clone().unwrap_or_default());
            if nft.find_rules(&table(), &rule.chain, &comment)?.is_empty() {
                tx.add_rule(rule);
            }
        }
    }
    owned.apply(&mut nft, &tx, true)
}

/// Fails naming the first chain or rule that is missing.
pub(super) fn check(rules: &Rules, bridge: Option<&str>) -> Result<(), FilterError> {
    let mut nft = NftBackend::open()?;
    let chains = nft.list_chains(&table())?;
    for chain in [FORWARD, ADMIN, ACCEPTS, STAGE_1, STAGE_2] {
        if !chains.iter().any(|c| c == chain) {
            return Err(FilterError::Missing {
                what: format!("the nftables chain inet {TABLE} {chain}"),
            });
        }
    }
    let at = &rules.attachment;
    let mine = CommentMatch::Exact(nft_comment(at));
    let found = nft.find_rules(&table(), ACCEPTS, &mine)?.len();
    let wanted = 2 * rules.addresses.len();
    if found < wanted {
        return Err(FilterError::Missing {
            what: format!(
                "{} of the {wanted} nftables rules of {} in inet {TABLE} {ACCEPTS}",
                wanted - found,
                at.container_id
            ),
        });
    }
    if let Some(bridge) = bridge {
        for rule in isolation_rules(bridge, rules.policy) {
            let comment = CommentMatch::Exact(rule.comment.clone().unwrap_or_default());
            if nft.find_rules(&table(), &rule.chain, &comment)?.is_empty() {
                return Err(FilterError::Missing {
                    what: format!(
                        "the nftables rule {comment:?} in inet {TABLE} {}",
                        rule.chain
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Whether the isolation chains may hold a rule of `bridge` (its name in
/// a rule's attributes: its interface matches, its comment); yes when an
/// error hides the answer.
pub(super) fn may_isolate(bridge: &str) -> bool {
    NftBackend::open()
        .and_then(|mut nft| nft.chains_mention(&table(), &[STAGE_1, STAGE_2], bridge.as_bytes()))
        .unwrap_or(true)
}

/// The deletions of every isolation rule of `bridge`.
fn unisolate(tx: &mut Transaction, bridge: &str) {
    for chain in [STAGE_1, STAGE_2] {
        for comment in [bridge_comment(bridge), isolated_comment(bridge)] {
            tx.delete_rules_by_comment(chain, CommentMatch::Exact(comment));
        }
    }
}

/// Deletes the attachment's rules (found by comment: no addresses
/// needed) and, given a bridge, its isolation rules.
pub(super) fn del(at: Option<&Attachment>, bridge: Option<&str>) -> Result<(), FilterError> {
    let mut nft = NftBackend::open()?;
    let owned = at.map(|at| attachment_rules(LAYOUT, at));
    if let Some(owned) = &owned {
        owned.delete(&mut nft, &table(), &[ACCEPTS])?;
    }
    if let Some(bridge) = bridge {
        let mut tx = Transaction::new(table());
        unisolate(&mut tx, bridge);
        nft.apply(&tx)?;
    }
    if let Some(owned) = &owned {
        owned.forget();
    }
    Ok(())
}

/// Deletes the rules of `network`'s attachments that `valid` does not
/// keep, and the isolation rules of bridges that no longer exist.
pub(super) fn gc(
    network: &str,
    valid: &ValidAttachments,
    bridge_exists: &dyn Fn(&str) -> bool,
) -> Result<(), FilterError> {
    let mut nft = NftBackend::open()?;
    let mut tx = Transaction::new(table());
    if let ValidAttachments::List(list) = valid {
        forget_unkept_records(LAYOUT, network, list);
        for rule in unkept_rules(&mut nft, &table(), ACCEPTS, network, list)? {
            tx.delete_rule(rule);
        }
    }
    let prefix = CommentMatch::Prefix(bridge_comment(""));
    for rule in nft.find_rules(&table(), STAGE_2, &prefix)? {
        let bridge = rule
            .comment
            .as_deref()
            .and_then(|c| c.strip_prefix(bridge_comment("").as_str()))
            .unwrap_or_default()
            .to_string();
        if !bridge.is_empty() && !bridge_exists(&bridge) {
            unisolate(&mut tx, &bridge);
        }
    }
    if tx.is_empty() {
        return Ok(());
    }
    nft.apply(&tx)
}
