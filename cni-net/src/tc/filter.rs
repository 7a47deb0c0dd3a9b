//! Filters and their actions: a u32 filter matching every packet with a
//! mirred action redirecting it to another link, and a link's filters
//! listed, like `tc filter`.

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::tc::{
    TcAction, TcActionAttribute, TcActionMirrorOption, TcActionOption, TcActionType, TcAttribute,
    TcFilterU32Option, TcHandle, TcMessage, TcMirror, TcMirrorActionType, TcOption, TcU32Key,
    TcU32Selector, TcU32SelectorFlags,
};
use netlink_packet_route::RouteNetlinkMessage;

use super::{Handle, ETH_P_ALL};
use crate::{NetError, Netlink, Op};

/// A u32 filter on every packet (protocol `all`, one key matching
/// anything) whose action redirects the packet to the egress of another
/// link (mirred, "stolen": the packet leaves this link's path).
///
/// Go: `netlink.U32` with a `netlink.MirredAction` of `TCA_EGRESS_REDIR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Redirect {
    /// The qdisc it hangs on (`ffff:`, the ingress qdisc).
    pub parent: Handle,
    /// Its priority (`pref`): lower runs first.
    pub priority: u16,
    /// The class it files packets under (`flowid`).
    pub flow_id: Handle,
    /// The index of the link that gets the packets.
    pub to: u32,
}

/// A filter as the kernel reports it; a u32 filter reports itself once
/// per hash table and node, and only a node carries a selector and
/// actions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Filter {
    /// The qdisc it hangs on.
    pub parent: Handle,
    /// Its priority (`pref`).
    pub priority: u16,
    /// The protocol it matches (`ETH_P_*`, host byte order).
    pub protocol: u16,
    /// Its kind (`u32`, `matchall`, ...).
    pub kind: String,
    /// The class it files packets under (`flowid`), when it says.
    pub flow_id: Option<Handle>,
    /// Whether its selector matches every packet: one key, mask 0.
    pub matches_all: bool,
    /// The links its mirred actions redirect to the egress of, in order.
    pub redirects_to: Vec<u32>,
}

impl Netlink {
    /// Adds `redirect` to link `index`.
    ///
    /// Like `tc filter add dev LINK parent ffff: protocol all prio 1 u32
    /// match u32 0 0 flowid 1:1 action mirred egress redirect dev TO`;
    /// Go: `netlink.FilterAdd(&netlink.U32{..})`.
    pub fn add_redirect_filter(&mut self, index: u32, redirect: &Redirect) -> Result<(), NetError> {
        let mut mirror = TcMirror::default();
        mirror.generic.action = TcActionType::Stolen;
        mirror.eaction = TcMirrorActionType::EgressRedir;
        mirror.ifindex = redirect.to;
        let mut action = TcAction::default();
        action.attributes = vec![
            TcActionAttribute::Kind("mirred".into()),
            TcActionAttribute::Options(vec![TcActionOption::Mirror(TcActionMirrorOption::Parms(
                mirror,
            ))]),
        ];
        let mut selector = TcU32Selector::default();
        selector.flags = TcU32SelectorFlags::Terminal;
        selector.nkeys = 1;
        selector.keys = vec![TcU32Key::default()];

        let mut msg = TcMessage::with_index(index as i32);
        msg.header.parent = TcHandle::from(redirect.parent.0);
        msg.header.info = filter_info(redirect.priority, ETH_P_ALL);
        msg.attributes = vec![
            TcAttribute::Kind("u32".into()),
            TcAttribute::Options(vec![
                TcOption::U32(TcFilterU32Option::ClassId(TcHandle::from(
                    redirect.flow_id.0,
                ))),
                TcOption::U32(TcFilterU32Option::Selector(selector)),
                TcOption::U32(TcFilterU32Option::Action(vec![action])),
            ]),
        ];
        let object = format!("redirecting {} to link #{}", self.label(index), redirect.to);
        self.change(
            RouteNetlinkMessage::NewTrafficFilter(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )
        .map_err(NetError::kernel(Op::AddFilter, object))
    }

    /// The filters of link `index` on the qdisc `parent`.
    ///
    /// Like `tc filter show dev LINK parent PARENT`; Go:
    /// `netlink.FilterList`.
    pub fn filters(&mut self, index: u32, parent: Handle) -> Result<Vec<Filter>, NetError> {
        let mut query = TcMessage::with_index(index as i32);
        query.header.parent = TcHandle::from(parent.0);
        let query = RouteNetlinkMessage::GetTrafficFilter(query);
        let replies = self.dump_tc(query, format!("filters of link #{index} on {parent}"))?;
        Ok(replies.iter().filter_map(filter_of).collect())
    }
}

/// `tcm_info` of a filter: the priority above the protocol, the protocol
/// in network byte order (`TC_H_MAKE(prio << 16, htons(proto))`).
fn filter_info(priority: u16, protocol: u16) -> u32 {
    (u32::from(priority) << 16) | u32::from(protocol.to_be())
}

fn filter_of(msg: &TcMessage) -> Option<Filter> {
    let kind = msg.attributes.iter().find_map(|a| match a {
        TcAttribute::Kind(k) => Some(k.clone()),
        _ => None,
    })?;
    let mut filter = Filter {
        parent: Handle(msg.header.parent.into()),
        priority: (msg.header.info >> 16) as u16,
        protocol: u16::from_be(msg.header.info as u16),
        kind,
        flow_id: None,
        matches_all: false,
        redirects_to: Vec::new(),
    };
    let options = msg.attributes.iter().filter_map(|a| match a {
        TcAttribute::Options(options) => Some(options),
        _ => None,
    });
    for option in options.flatten() {
        match option {
            TcOption::U32(TcFilterU32Option::ClassId(id)) => {
                filter.flow_id = Some(Handle((*id).into()));
            }
            TcOption::U32(TcFilterU32Option::Selector(sel)) => {
                filter.matches_all = sel.keys.len() == 1 && sel.keys[0].mask == 0;
            }
            TcOption::U32(TcFilterU32Option::Action(actions)) => {
                filter
                    .redirects_to
                    .extend(actions.iter().filter_map(redirect_of));
            }
            _ => {}
        }
    }
    Some(filter)
}

/// The link a mirred action redirects to the egress of.
fn redirect_of(action: &TcAction) -> Option<u32> {
    action.attributes.iter().find_map(|a| match a {
        TcActionAttribute::Options(options) => options.iter().find_map(|o| match o {
            TcActionOption::Mirror(TcActionMirrorOption::Parms(m))
                if m.eaction == TcMirrorActionType::EgressRedir =>
            {
                Some(m.ifindex)
            }
            _ => None,
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_priority_and_protocol_share_tcm_info_as_the_kernel_packs_them() {
        let info = filter_info(1, ETH_P_ALL);
        assert_eq!(info.to_ne_bytes()[..2], ETH_P_ALL.to_be_bytes());
        assert_eq!(info >> 16, 1);
    }
}
