//! Link aliases (`IFLA_IFALIAS`): a free-form name the kernel keeps with
//! a link, across renames and namespace moves.

use netlink_packet_route::link::{LinkAttribute, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;

use crate::link::{link_message, without_stats};
use crate::{LinkId, NetError, Netlink, Op};

/// The longest alias the kernel keeps (`IFALIASZ` - 1 bytes).
pub const MAX_ALIAS_LEN: usize = 255;

impl Netlink {
    /// Sets the alias of link `index`; an empty one removes it.
    ///
    /// `host-device` keeps a device's original name here while the device
    /// is in a container under another name.
    ///
    /// Like `ip link set DEV alias NAME`; Go: `netlink.LinkSetAlias`.
    pub fn set_alias(&mut self, index: u32, alias: &str) -> Result<(), NetError> {
        if alias.len() > MAX_ALIAS_LEN || alias.contains('\0') {
            return Err(NetError::InvalidResult(format!(
                "alias {alias:?}: longer than {MAX_ALIAS_LEN} bytes or holds a NUL"
            )));
        }
        let mut msg = link_message(index);
        msg.attributes
            .push(LinkAttribute::IfAlias(alias.to_owned()));
        self.set_link(msg, Op::SetAlias)
    }

    /// The alias of the link `id` names, `None` when it has none;
    /// [`NetError::NoSuchLink`] when there is no such link.
    ///
    /// Like `ip link show DEV` (its `alias` line); Go: `LinkAttrs.Alias`.
    pub fn alias(&mut self, id: impl Into<LinkId>) -> Result<Option<String>, NetError> {
        let link = self.link(id)?;
        let replies = self
            .get(RouteNetlinkMessage::GetLink(without_stats(link_message(
                link.index,
            ))))
            .map_err(NetError::kernel(Op::LookUpLink, LinkId::Index(link.index)))?;
        Ok(replies.iter().find_map(alias_of).filter(|a| !a.is_empty()))
    }
}

fn alias_of(reply: &RouteNetlinkMessage) -> Option<String> {
    let RouteNetlinkMessage::NewLink(LinkMessage { attributes, .. }) = reply else {
        return None;
    };
    attributes.iter().find_map(|a| match a {
        LinkAttribute::IfAlias(alias) => Some(alias.clone()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use crate::testing::TempNetns;

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn an_alias_is_kept_until_it_is_set_empty() {
        let ns = TempNetns::new("alias").unwrap();
        let link = ns.add_veth("dev0", "peer0", None).unwrap();
        let mut nl = ns.socket().unwrap();
        assert_eq!(nl.alias("dev0").unwrap(), None);
        nl.set_alias(link.index, "ens1f0").unwrap();
        nl.rename(link.index, "net1").unwrap();
        assert_eq!(nl.alias("net1").unwrap().as_deref(), Some("ens1f0"));
        nl.set_alias(link.index, "").unwrap();
        assert_eq!(nl.alias(link.index).unwrap(), None);
        assert!(nl.set_alias(link.index, &"x".repeat(256)).is_err());
    }
}
