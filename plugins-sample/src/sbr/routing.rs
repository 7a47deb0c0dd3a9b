//! What sbr does inside the namespace: a rule per address, and the
//! interface's routes moved to that address's table.

use std::collections::BTreeSet;
use std::net::IpAddr;

use cni_net::{NetError, Netlink, Rule, TableRoute, MAIN_TABLE};
use cni_types::{IpConfig, IpNetwork, Route};

use super::config::Plan;

/// Where the search for a free table starts, as in the reference.
const FIRST_TABLE: u32 = 100;

/// The first table from `from` on that no rule and no route uses.
///
/// Go: `getNextTableID`.
fn next_free(taken: &BTreeSet<u32>, from: u32) -> u32 {
    (from..=u32::MAX)
        .find(|t| !taken.contains(t))
        .unwrap_or(u32::MAX)
}

/// With `table`: only a rule per address to it.
///
/// Go: `doRoutesWithTable`.
pub(super) fn rules_to_table(
    nl: &mut Netlink,
    ips: &[IpConfig],
    table: u32,
) -> Result<(), NetError> {
    let existing = nl.rules()?;
    let mut added = Vec::new();
    for ip in ips {
        let rule = Rule::from_source(IpNetwork::host(ip.address.addr()), table);
        // The very rule wanted (an ADD repeated after a DEL that could not
        // see the address) is kept, and not undone on failure: the kernel
        // would add a second one under another priority.
        if existing
            .iter()
            .any(|r| r.src == rule.src && r.table == table)
        {
            continue;
        }
        if let Err(e) = nl.add_rule(&rule) {
            undo(nl, &added, &[], 0);
            return Err(e);
        }
        added.push(rule);
    }
    Ok(())
}

/// Without `table`: per address, a new table, a rule to it, a default
/// route through its gateway there, and a copy of the interface's main
/// routes that belong to it; then the interface's main routes go (or,
/// with `addSourceHints`, all but the subnet routes, which get the
/// address as source hint).
///
/// Go: `doRoutes`.
pub(super) fn routes_per_address(
    nl: &mut Netlink,
    plan: &Plan,
    ifname: &str,
    ips: &[IpConfig],
) -> Result<(), NetError> {
    let mut taken: BTreeSet<u32> = nl.rules()?.iter().map(|r| r.table).collect();
    taken.extend(nl.routes()?.iter().filter_map(|r| r.route.table));
    let link = nl.link(ifname)?;
    let main = nl.table_routes(link.index, MAIN_TABLE)?;

    let mut added = Vec::new();
    let mut tables = Vec::new();
    let mut table = next_free(&taken, FIRST_TABLE);
    for ip in ips {
        let done = fill_table(nl, plan, link.index, ip, &main, table, &mut added);
        tables.push(table);
        if let Err(e) = done {
            undo(nl, &added, &tables, link.index);
            return Err(e);
        }
        table = next_free(&taken, table.saturating_add(1));
    }

    if plan.add_source_hints {
        for ip in ips {
            let subnet = ip.address.subnet();
            let route = Route {
                table: Some(MAIN_TABLE),
                scope: Some(253),
                ..Route::new(subnet, None)
            };
            // A hint that cannot be set leaves destination-based routing
            // as it was; the reference only warns too.
            let _ = nl.replace_route_from(link.index, &route, ip.address.addr());
        }
        for route in main.iter().filter(|r| !r.is_link_scope()) {
            let _ = nl.delete_table_route(route);
        }
    } else {
        for route in &main {
            match nl.delete_table_route(route) {
                Err(e) if !e.is_not_found() => return Err(e),
                _ => {}
            }
        }
    }
    Ok(())
}

/// One address's rule, default route and routes, in `table`.
fn fill_table(
    nl: &mut Netlink,
    plan: &Plan,
    oif: u32,
    ip: &IpConfig,
    main: &[TableRoute],
    table: u32,
    added: &mut Vec<Rule>,
) -> Result<(), NetError> {
    let address = ip.address.addr();
    let rule = Rule::from_source(IpNetwork::host(address), table);
    nl.add_rule(&rule)?;
    added.push(rule);
    if let Some(gw) = plan.gateway_for(address).or(ip.gateway) {
        let default = Route {
            table: Some(table),
            ..Route::new(IpNetwork::any_of(address), Some(gw))
        };
        nl.add_route(oif, &default)?;
    }
    for route in main {
        let belongs = route.src.is_some_and(|s| ip.address.contains(s))
            || route.gw.is_some_and(|g| ip.address.contains(g))
            || (route.src.is_none() && route.gw.is_none());
        if belongs {
            nl.copy_route_to_table(route, table)?;
        }
    }
    Ok(())
}

/// Removes the rules added and the link's routes in the tables filled,
/// after a failure part-way.
fn undo(nl: &mut Netlink, rules: &[Rule], tables: &[u32], oif: u32) {
    for rule in rules {
        let _ = nl.delete_rule(rule);
    }
    for table in tables {
        for route in nl.table_routes(oif, *table).unwrap_or_default() {
            let _ = nl.delete_table_route(&route);
        }
    }
}

/// DEL: the rules from the interface's addresses, and from `known` (the
/// addresses `prevResult` gives it, which DEL sees from 0.4.0 on even
/// when the link has lost them), to `table` only when it is set.
///
/// Go: `tidyRules`, which knows the link's addresses only.
pub(super) fn tidy_rules(
    nl: &mut Netlink,
    ifname: &str,
    table: Option<u32>,
    known: &[IpAddr],
) -> Result<(), NetError> {
    let mut addresses = known.to_vec();
    if let Some(link) = nl.find_link(ifname)? {
        addresses.extend(
            nl.addresses(Some(link.index))?
                .iter()
                .map(|a| a.network.addr()),
        );
    }
    let mut failed = None;
    for rule in nl.rules()? {
        if table.is_some_and(|t| t != rule.table) {
            continue;
        }
        if rule.src.is_some_and(|s| addresses.contains(&s.addr())) {
            match nl.delete_rule(&rule) {
                Err(e) if !e.is_not_found() => failed = Some(e),
                _ => {}
            }
        }
    }
    failed.map_or(Ok(()), Err)
}

/// CHECK: each address has its rule (to `table`, when set).
pub(super) fn check_rules(
    nl: &mut Netlink,
    ips: &[IpConfig],
    table: Option<u32>,
) -> Result<(), NetError> {
    let rules = nl.rules()?;
    for ip in ips {
        let src = IpNetwork::host(ip.address.addr());
        let found = rules
            .iter()
            .any(|r| r.src == Some(src) && table.is_none_or(|t| t == r.table));
        if !found {
            return Err(NetError::Differs(format!(
                "no rule from {src}{}",
                table.map(|t| format!(" to table {t}")).unwrap_or_default()
            )));
        }
    }
    Ok(())
}
