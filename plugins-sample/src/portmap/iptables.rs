//! portmap's iptables layout, in the `nat` table of each family, as the
//! reference lays it out (so either plugin's DEL removes the other's
//! rules):
//!
//! ```text
//! PREROUTING, OUTPUT:    -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT
//! CNI-HOSTPORT-DNAT:     -p tcp -m comment --comment "dnat name: \"N\" id: \"ID\""
//!                          -m multiport --dports 8080,8081 -j CNI-DN-<hash>
//! CNI-DN-<hash>:         -s 10.88.0.0/16 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK
//!                        -s 127.0.0.1/32 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK
//!                        -p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.88.0.5:80
//! CNI-HOSTPORT-SETMARK:  -m comment --comment "CNI portfwd masquerade mark"
//!                          -j MARK --set-xmark 0x2000/0x2000
//! POSTROUTING (first):   -m comment --comment "CNI portfwd requiring masquerade"
//!                          -j CNI-HOSTPORT-MASQ
//! CNI-HOSTPORT-MASQ:     -m mark --mark 0x2000/0x2000 -j MASQUERADE
//! ```
//!
//! Go: plugins `plugins/meta/portmap/portmap_iptables.go` and `chain.go`.

use std::collections::BTreeMap;

use cni_netfilter::iptables::{may_mention, IptablesBackend, Saved};
use cni_netfilter::{
    chain_name, Action, Backend, Chain, Family, FilterError, Match, Op, Rule, Table, Transaction,
};
use cni_types::{IpFamily, IpNetwork};

use super::config::Setup;

/// The chain every container's DNAT chain is entered from.
pub const DNAT_CHAIN: &str = "CNI-HOSTPORT-DNAT";
/// The chain that marks packets for masquerading.
pub const SETMARK_CHAIN: &str = "CNI-HOSTPORT-SETMARK";
/// The chain that masquerades marked packets.
pub const MASQ_CHAIN: &str = "CNI-HOSTPORT-MASQ";
/// The summary chain of old versions' per-container SNAT chains, whose
/// leftovers DEL still removes.
pub const OLD_SNAT_CHAIN: &str = "CNI-HOSTPORT-SNAT";
/// How many ports one multiport match takes.
const MULTIPORT_MAX: usize = 15;

/// The `nat` table of a family.
pub fn table(ip: IpFamily) -> Table {
    Table::new(Family::of(ip), "nat")
}

/// The per-container chain: `CNI-DN-` and a hash of network and
/// container ID.
pub fn dnat_chain(network: &str, container_id: &str) -> String {
    chain_name("DN-", network, container_id)
}

/// The comment of the entry rules, cut to iptables' 255 bytes as the
/// reference cuts it.
///
/// Go: `trimComment(fmt.Sprintf("dnat name: %q id: %q", ..))` with `%s`.
pub fn entry_comment(network: &str, container_id: &str) -> String {
    let comment = format!("dnat name: \"{network}\" id: \"{container_id}\"");
    if comment.len() <= 255 {
        return comment;
    }
    let mut end = 253;
    while !comment.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &comment[..end])
}

/// The container ID of an entry rule of `network`, read back from its
/// comment; none for other networks' rules and cut comments.
pub fn container_of(comment: &str, network: &str) -> Option<String> {
    let rest = comment.strip_prefix(&format!("dnat name: \"{network}\" id: \""))?;
    let id = rest.strip_suffix('"')?;
    (!id.contains('"')).then(|| id.to_string())
}

/// The per-container chain's rules and the rules that enter it.
struct DnatChain {
    name: String,
    rules: Vec<Rule>,
    entries: Vec<Rule>,
}

/// Go: `genDnatChain` filled by `fillDnatRules`.
fn container_chain(setup: &Setup, container_id: &str, container: IpNetwork) -> DnatChain {
    let ip = container.family();
    let name = dnat_chain(&setup.network, container_id);
    let comment = entry_comment(&setup.network, container_id);
    let conditions = setup.conditions(ip);
    let (addressing, extensions): (Vec<&Match>, Vec<&Match>) = conditions
        .iter()
        .partition(|m| !matches!(m, Match::Mark { .. }));

    // Entry rules: every mapping's host port (both families' mappings, as
    // the reference groups them), by protocol in name order, 15 a rule.
    let mut by_protocol: BTreeMap<&str, (cni_netfilter::Protocol, Vec<u16>)> = BTreeMap::new();
    for m in &setup.mappings {
        by_protocol
            .entry(m.protocol.as_str())
            .or_insert((m.protocol, Vec::new()))
            .1
            .push(m.host_port);
    }
    let mut entries = Vec::new();
    for (protocol, ports) in by_protocol.values() {
        for chunk in ports.chunks(MULTIPORT_MAX) {
            let mut rule = Rule::new(DNAT_CHAIN);
            rule.matches.extend(addressing.iter().map(|m| (*m).clone()));
            rule = rule
                .matching(Match::Protocol(*protocol))
                .matching(Match::DestinationPorts(chunk.to_vec()));
            rule.matches.extend(extensions.iter().map(|m| (*m).clone()));
            entries.push(
                rule.comment(comment.clone())
                    .then(Action::Jump(name.clone())),
            );
        }
    }

    let set_mark = setup
        .external_set_mark_chain
        .clone()
        .unwrap_or_else(|| SETMARK_CHAIN.to_string());
    let mut rules = Vec::new();
    for m in setup.mappings.iter().filter(|m| m.applies_to(ip)) {
        let base = |source: Option<IpNetwork>| {
            let mut rule = Rule::new(name.clone());
            if let Some(net) = source {
                rule = rule.matching(Match::source(net));
            }
            if let Some(ip) = m.host_ip {
                rule = rule.matching(Match::destination(IpNetwork::host(ip)));
            }
            rule.matching(Match::Protocol(m.protocol))
                .matching(Match::DestinationPort(m.host_port))
        };
        if setup.snat {
            // Hairpin: from the container's subnet, as the reference
            // writes the address with its prefix; masqAll's 0.0.0.0/0
            // is no match at all, which is how iptables stores it.
            let source = (!setup.masq_all).then_some(container);
            rules.push(base(source).then(Action::Jump(set_mark.clone())));
            if ip == IpFamily::V4 && !setup.masq_all {
                let localhost = IpNetwork::host([127, 0, 0, 1].into());
                rules.push(base(Some(localhost)).then(Action::Jump(set_mark.clone())));
            }
        }
        rules.push(base(None).then(Action::Dnat {
            addr: container.addr(),
            port: Some(m.container_port),
        }));
    }
    DnatChain {
        name,
        rules,
        entries,
    }
}

/// ADD for one container address: the shared chains (when this plugin
/// marks for masquerading itself), the top-level jumps, and the
/// container's chain, each rule added unless it is there.
///
/// Go: `portMapperIPTables.forwardPorts`.
pub fn forward(setup: &Setup, container_id: &str, container: IpNetwork) -> Transaction {
    let mut tx = Transaction::new(table(container.family()));
    if setup.snat && setup.external_set_mark_chain.is_none() {
        let mark = setup.mark;
        tx.ensure_chain(Chain::new(SETMARK_CHAIN)).ensure_rule(
            Rule::new(SETMARK_CHAIN)
                .comment("CNI portfwd masquerade mark")
                .then(Action::SetMark {
                    value: mark,
                    mask: mark,
                }),
        );
        tx.ensure_chain(Chain::new(MASQ_CHAIN))
            .ensure_rule(
                Rule::new(MASQ_CHAIN)
                    .matching(Match::Mark {
                        value: mark,
                        mask: mark,
                    })
                    .then(Action::Masquerade),
            )
            .push(Op::EnsureRule {
                rule: Rule::new("POSTROUTING")
                    .comment("CNI portfwd requiring masquerade")
                    .then(Action::Jump(MASQ_CHAIN.into())),
                first: true,
            });
    }
    tx.ensure_chain(Chain::new(DNAT_CHAIN));
    for entry in ["PREROUTING", "OUTPUT"] {
        tx.ensure_rule(
            Rule::new(entry)
                .matching(Match::LocalDestination)
                .then(Action::Jump(DNAT_CHAIN.into())),
        );
    }
    let chain = container_chain(setup, container_id, container);
    tx.ensure_chain(Chain::new(chain.name.clone()));
    for rule in chain.rules.into_iter().chain(chain.entries) {
        tx.ensure_rule(rule);
    }
    tx
}

/// CHECK for one container address: the container's chain exists and
/// holds its rules, and its entry rules are there.
///
/// Go: `portMapperIPTables.checkPorts` (`chain.check`).
pub fn check(
    backend: &mut IptablesBackend,
    setup: &Setup,
    container_id: &str,
    container: IpNetwork,
) -> Result<(), FilterError> {
    let table = table(container.family());
    let chain = container_chain(setup, container_id, container);
    if !backend.list_chains(&table)?.contains(&chain.name) {
        return Err(FilterError::Missing {
            what: format!(
                "chain {} of {} table nat",
                chain.name,
                family_command(&table)
            ),
        });
    }
    let wanted: Vec<Rule> = chain.rules.into_iter().chain(chain.entries).collect();
    match backend.missing_rules(&table, &wanted)?.first() {
        None => Ok(()),
        Some(rule) => Err(FilterError::Missing {
            what: format!(
                "a rule of chain {} of {} table nat ({rule:?})",
                rule.chain,
                family_command(&table)
            ),
        }),
    }
}

fn family_command(table: &Table) -> &'static str {
    if table.family == Family::Ip6 {
        "ip6tables"
    } else {
        "iptables"
    }
}

/// DEL for one family: the jumps to the container's chain (and to an old
/// version's SNAT chain), then the chains. Nothing when they are absent.
/// On iptables-nft, one nf_tables batch when nf_tables lists the chains
/// ([`unforward_directly`]); otherwise, or when that fails,
/// [`unforward_listed`].
///
/// `Ok(Err(_))` when the family's table cannot be listed (its iptables
/// is not usable); DEL then goes on with the other family.
///
/// Go: `portMapperIPTables.unforwardPorts` (`chain.teardown`).
pub fn unforward(
    backend: &mut IptablesBackend,
    network: &str,
    container_id: &str,
    ip: IpFamily,
) -> Result<Result<(), FilterError>, FilterError> {
    if unforward_directly(backend, network, container_id, ip) {
        return Ok(Ok(()));
    }
    unforward_listed(backend, network, container_id, ip)
}

/// [`unforward`] from a listing of the table: one `iptables-save` and at
/// most one `iptables-restore`. `Ok(Err(_))` when the table cannot be
/// listed.
pub fn unforward_listed(
    backend: &mut IptablesBackend,
    network: &str,
    container_id: &str,
    ip: IpFamily,
) -> Result<Result<(), FilterError>, FilterError> {
    let table = table(ip);
    let mut listed = false;
    let applied = backend.apply_listed(&table, |saved| {
        listed = true;
        teardown(&table, saved, network, container_id)
    });
    match applied {
        Err(e) if !listed => Ok(Err(e)),
        other => other.map(Ok),
    }
}

/// A container's two chains in `ip`'s nat table, each with the chain
/// whose rules enter it: its DNAT chain, and the SNAT chain of versions
/// before 0.8.
fn chains(network: &str, container_id: &str) -> [(String, &'static str); 2] {
    [
        (dnat_chain(network, container_id), DNAT_CHAIN),
        (chain_name("SN-", network, container_id), OLD_SNAT_CHAIN),
    ]
}

/// Whether `ip`'s nat table may hold a chain of this container: `false`
/// only when it certainly holds neither
/// ([`cni_netfilter::iptables::may_mention`]: no process).
pub fn may_hold(network: &str, container_id: &str, ip: IpFamily) -> bool {
    let table = table(ip);
    let chains = chains(network, container_id);
    let needles = chains.each_ref().map(|(chain, _)| chain.as_bytes());
    may_mention(table.family, &table.name, &needles)
}

/// The container's chains in `ip`'s nat table and the rules entering
/// them removed in one nf_tables batch
/// ([`IptablesBackend::remove_chains_directly`]): `true` when done so,
/// `false`, having changed nothing, when the caller must list the table
/// with `iptables-save` ([`unforward_listed`]).
pub fn unforward_directly(
    backend: &mut IptablesBackend,
    network: &str,
    container_id: &str,
    ip: IpFamily,
) -> bool {
    let chains = chains(network, container_id);
    let pairs = chains
        .each_ref()
        .map(|(chain, entry)| (chain.as_str(), *entry));
    matches!(backend.remove_chains_directly(&table(ip), &pairs), Ok(true))
}

/// The transaction removing a container's chains and the jumps to them,
/// from a listing of the table.
fn teardown(table: &Table, saved: &Saved, network: &str, container_id: &str) -> Transaction {
    let mut tx = Transaction::new(table.clone());
    for (chain, entered_from) in chains(network, container_id) {
        if !saved.chains.contains(&chain) {
            continue;
        }
        for rule in saved.rules.iter().filter(|r| r.chain == entered_from) {
            if rule.jumps_to(&chain) {
                tx.delete_rule(rule.clone());
            }
        }
        tx.delete_chain(chain);
    }
    tx
}

/// The containers of `network` with rules in a family, from the entry
/// rules' comments (for GC).
pub fn containers(
    backend: &mut IptablesBackend,
    network: &str,
    ip: IpFamily,
) -> Result<Vec<String>, FilterError> {
    let mut ids: Vec<String> = backend
        .list_rules(&table(ip), DNAT_CHAIN)?
        .iter()
        .filter_map(|r| container_of(r.comment.as_deref()?, network))
        .collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Whether a family's iptables works (`iptables -t nat -S OUTPUT`), as
/// DEL asks before tearing down in it.
///
/// Go: `maybeGetIptables`.
pub fn usable(backend: &mut IptablesBackend, ip: IpFamily) -> Result<(), FilterError> {
    backend.list_chains(&table(ip)).map(drop)
}

#[cfg(test)]
mod tests {
    use cni_netfilter::BackendKind;

    use super::*;
    use crate::portmap::config::Mapping;

    fn setup(snat: bool, masq_all: bool) -> Setup {
        let mapping = |host_port, container_port, protocol, host_ip: Option<&str>| Mapping {
            host_port,
            container_port,
            protocol,
            host_ip: host_ip.map(|ip| ip.parse().unwrap()),
            host_family: host_ip.map(|ip| match ip.contains(':') {
                true => IpFamily::V6,
                false => IpFamily::V4,
            }),
        };
        Setup {
            network: "cni0".into(),
            backend: BackendKind::Iptables,
            snat,
            masq_all,
            mark: 0x2000,
            external_set_mark_chain: None,
            conditions_v4: vec![],
            conditions_v6: vec![],
            mappings: vec![
                mapping(8080, 80, cni_netfilter::Protocol::Tcp, None),
                mapping(5353, 53, cni_netfilter::Protocol::Udp, Some("192.168.1.1")),
                mapping(9090, 90, cni_netfilter::Protocol::Tcp, Some("fd00::1")),
            ],
            ipv4: Some("10.88.0.5/16".parse().unwrap()),
            ipv6: None,
        }
    }

    #[test]
    fn names_and_comments_are_the_reference_ones() {
        let name = dnat_chain("cni0", "ctr-1");
        assert!(name.starts_with("CNI-DN-") && name.len() == 28, "{name}");
        assert_eq!(
            entry_comment("cni0", "ctr-1"),
            r#"dnat name: "cni0" id: "ctr-1""#
        );
        assert_eq!(
            container_of(r#"dnat name: "cni0" id: "ctr-1""#, "cni0").as_deref(),
            Some("ctr-1")
        );
        assert_eq!(
            container_of(r#"dnat name: "cni1" id: "ctr-1""#, "cni0"),
            None
        );
        let long = entry_comment("n", &"x".repeat(300));
        assert_eq!(long.len(), 256);
        assert!(long.ends_with("..."));
        assert_eq!(container_of(&long, "n"), None);
    }

    #[test]
    fn the_container_chain_holds_mark_mark_dnat_per_mapping_of_its_family() {
        let s = setup(true, false);
        let chain = container_chain(&s, "ctr-1", s.ipv4.unwrap());
        let dnat = |r: &Rule| matches!(r.action, Some(Action::Dnat { .. }));
        assert_eq!(chain.rules.len(), 6, "two IPv4 mappings, three rules each");
        assert_eq!(chain.rules.iter().filter(|r| dnat(r)).count(), 2);
        assert_eq!(
            chain.rules[0].matches[0],
            Match::source("10.88.0.5/16".parse().unwrap()),
            "hairpin from the container's network, as the reference writes it"
        );
        // Entry rules name every mapping's port, tcp before udp.
        assert_eq!(chain.entries.len(), 2);
        assert_eq!(
            chain.entries[0].matches[1],
            Match::DestinationPorts(vec![8080, 9090])
        );
        assert_eq!(
            chain.entries[1].matches[1],
            Match::DestinationPorts(vec![5353])
        );
        let no_snat = container_chain(&setup(false, false), "ctr-1", s.ipv4.unwrap());
        assert_eq!(no_snat.rules.len(), 2);
        let all = container_chain(&setup(true, true), "ctr-1", s.ipv4.unwrap());
        assert_eq!(
            all.rules.len(),
            4,
            "masqAll: one mark rule, no localhost rule"
        );
        assert!(!all.rules[0]
            .matches
            .iter()
            .any(|m| matches!(m, Match::Source { .. })));
    }

    #[test]
    fn more_than_15_ports_of_a_protocol_take_several_entry_rules() {
        let mut s = setup(true, false);
        s.mappings = (1..=16)
            .map(|p| Mapping {
                host_port: 1000 + p,
                container_port: p,
                protocol: cni_netfilter::Protocol::Tcp,
                host_ip: None,
                host_family: None,
            })
            .collect();
        let chain = container_chain(&s, "c", s.ipv4.unwrap());
        assert_eq!(chain.entries.len(), 2);
    }
}
