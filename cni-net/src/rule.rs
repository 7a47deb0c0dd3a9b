//! Policy routing rules: which routing table a packet is looked up in,
//! chosen by its source address, like `ip rule`.

use cni_types::IpNetwork;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleHeader, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::addr::family;
use crate::{NetError, Netlink, Op};

/// A rule sending packets from `src` to routing table `table`: `from SRC
/// lookup TABLE`, with the kernel's other selectors left unset.
///
/// Go: `netlink.Rule` (the fields a CNI plugin sets: `Src`, `Table`,
/// `Priority`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rule {
    /// The source addresses it matches; `None` matches all (of
    /// `family_v4`'s family).
    pub src: Option<IpNetwork>,
    /// Whether the rule is IPv4's (else IPv6's), for a rule without `src`.
    pub family_v4: bool,
    /// The table looked up.
    pub table: u32,
    /// Its position: lower first. `None` on add lets the kernel choose
    /// (just before the last rule with a priority above 0, as `ip rule
    /// add` without `priority`).
    pub priority: Option<u32>,
}

impl Rule {
    /// `from SRC lookup TABLE`, priority chosen by the kernel.
    pub fn from_source(src: IpNetwork, table: u32) -> Rule {
        Rule {
            src: Some(src),
            family_v4: src.is_ipv4(),
            table,
            priority: None,
        }
    }
}

impl std::fmt::Display for Rule {
    /// As `ip rule` prints it: `[PRIO:] from SRC|all lookup TABLE`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(p) = self.priority {
            write!(f, "{p}: ")?;
        }
        match self.src {
            Some(src) => write!(f, "from {src} lookup {}", self.table),
            None => write!(f, "from all lookup {}", self.table),
        }
    }
}

impl Netlink {
    /// Adds a rule; an identical one already there at the same priority
    /// is `EEXIST`. Without a priority the kernel chooses one, so the same
    /// rule added twice is there twice: look in [`Netlink::rules`] first
    /// to add it once.
    ///
    /// Like `ip rule add from SRC table TABLE [priority P]`; Go:
    /// `netlink.RuleAdd`.
    pub fn add_rule(&mut self, rule: &Rule) -> Result<(), NetError> {
        self.change(
            RouteNetlinkMessage::NewRule(rule_message(rule)),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(NetError::kernel(Op::AddRule, rule))
    }

    /// Deletes the rule matching `rule` (the first one, when it has no
    /// priority).
    ///
    /// Like `ip rule del from SRC table TABLE [priority P]`; Go:
    /// `netlink.RuleDel`.
    pub fn delete_rule(&mut self, rule: &Rule) -> Result<(), NetError> {
        self.change(RouteNetlinkMessage::DelRule(rule_message(rule)), 0)
            .map_err(NetError::kernel(Op::DeleteRule, rule))
    }

    /// The rules that look up a table, both families, in the kernel's
    /// order. Rules with another action (`goto`, `blackhole`) or other
    /// selectors are listed by their source and table alone.
    ///
    /// Like `ip rule show`; Go: `netlink.RuleList(FAMILY_ALL)`.
    pub fn rules(&mut self) -> Result<Vec<Rule>, NetError> {
        let mut out = Vec::new();
        for af in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut msg = RuleMessage::default();
            msg.header.family = af;
            let replies = self
                .dump(RouteNetlinkMessage::GetRule(msg))
                .map_err(NetError::kernel(Op::List, "rules"))?;
            out.extend(replies.iter().filter_map(rule_of));
        }
        Ok(out)
    }
}

fn rule_message(rule: &Rule) -> RuleMessage {
    let mut msg = RuleMessage::default();
    msg.header.family = match rule.src {
        Some(src) => family(src.addr()),
        None if rule.family_v4 => AddressFamily::Inet,
        None => AddressFamily::Inet6,
    };
    msg.header.action = RuleAction::ToTable;
    // Tables above 255 only fit the attribute; the header then says so.
    msg.header.table = u8::try_from(rule.table).unwrap_or(RuleHeader::default().table);
    if let Some(src) = rule.src {
        msg.header.src_len = src.prefix();
        msg.attributes.push(RuleAttribute::Source(src.network()));
    }
    msg.attributes.push(RuleAttribute::Table(rule.table));
    if let Some(priority) = rule.priority {
        msg.attributes.push(RuleAttribute::Priority(priority));
    }
    msg
}

fn rule_of(reply: &RouteNetlinkMessage) -> Option<Rule> {
    let RouteNetlinkMessage::NewRule(msg) = reply else {
        return None;
    };
    let family_v4 = match msg.header.family {
        AddressFamily::Inet => true,
        AddressFamily::Inet6 => false,
        _ => return None,
    };
    let mut rule = Rule {
        src: None,
        family_v4,
        table: u32::from(msg.header.table),
        priority: Some(0),
    };
    for attr in &msg.attributes {
        match attr {
            RuleAttribute::Source(ip) => {
                rule.src = IpNetwork::new(*ip, msg.header.src_len);
            }
            RuleAttribute::Table(t) => rule.table = *t,
            RuleAttribute::Priority(p) => rule.priority = Some(*p),
            _ => {}
        }
    }
    Some(rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempNetns;

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_source_rule_is_listed_with_its_table_and_deleted() {
        let ns = TempNetns::new("rule").unwrap();
        let mut nl = ns.socket().unwrap();
        let v4 = Rule::from_source("10.1.2.3/32".parse().unwrap(), 100);
        let v6 = Rule::from_source("fd00::3/128".parse().unwrap(), 1000);
        nl.add_rule(&v4).unwrap();
        nl.add_rule(&v6).unwrap();
        let rules = nl.rules().unwrap();
        let found: Vec<&Rule> = rules.iter().filter(|r| r.src.is_some()).collect();
        assert_eq!(found.len(), 2, "{rules:?}");
        assert_eq!((found[0].src, found[0].table), (v4.src, 100));
        assert_eq!((found[1].src, found[1].table), (v6.src, 1000));
        // The kernel chose a priority below the main table's rule (32766).
        assert!(found[0].priority.is_some_and(|p| p < 32766), "{found:?}");
        // The same rule at the same priority is refused; without a
        // priority the kernel would take it again under another one.
        let again = Rule {
            priority: found[0].priority,
            ..v4
        };
        let err = nl.add_rule(&again).unwrap_err();
        assert!(
            err.is_exists() && err.to_string().contains("from 10.1.2.3/32 lookup 100"),
            "{err}"
        );
        nl.delete_rule(found[0]).unwrap();
        nl.delete_rule(&v6).unwrap();
        assert!(nl.rules().unwrap().iter().all(|r| r.src.is_none()));
    }
}
