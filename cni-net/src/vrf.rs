//! VRF devices: a routing table of their own for the links enslaved to
//! them, like `ip link add NAME type vrf table T`.

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVrf, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::RouteNetlinkMessage;

use crate::link::{link_message, without_stats};
use crate::{validate_ifname, Link, LinkId, NetError, Netlink, Op};

impl Netlink {
    /// Creates a VRF device bound to routing table `table`, up. A kernel
    /// built without VRF support (`CONFIG_NET_VRF`) refuses with
    /// `EOPNOTSUPP`, which the error names as missing kernel support.
    ///
    /// Like `ip link add NAME up type vrf table TABLE`; Go:
    /// `netlink.LinkAdd(&netlink.Vrf{Table: ..})` then `LinkSetUp`.
    pub fn add_vrf(&mut self, name: &str, table: u32) -> Result<Link, NetError> {
        validate_ifname(name)?;
        let mut msg = LinkMessage::default();
        msg.header.flags = LinkFlags::Up;
        msg.header.change_mask = LinkFlags::Up;
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Vrf),
            LinkInfo::Data(InfoData::Vrf(vec![InfoVrf::TableId(table)])),
        ]));
        self.change(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
            .map_err(|e| {
                let unsupported = e.raw_os_error() == Some(nix::errno::Errno::EOPNOTSUPP as i32);
                let object = if unsupported {
                    format!("vrf {name:?} (table {table}): the kernel has no vrf support (CONFIG_NET_VRF)")
                } else {
                    format!("vrf {name:?} (table {table})")
                };
                NetError::kernel(Op::CreateVrf, object)(e)
            })?;
        self.link(name)
    }

    /// The routing table of the VRF device `id` names; `None` when the
    /// link is not a VRF.
    ///
    /// Like `ip -d link show NAME` (its `vrf table` line); Go:
    /// `netlink.Vrf.Table`.
    pub fn vrf_table(&mut self, id: impl Into<LinkId>) -> Result<Option<u32>, NetError> {
        let link = self.link(id)?;
        let replies = self
            .get(RouteNetlinkMessage::GetLink(without_stats(link_message(
                link.index,
            ))))
            .map_err(NetError::kernel(Op::LookUpLink, LinkId::Index(link.index)))?;
        Ok(replies.iter().find_map(table_of))
    }
}

fn table_of(reply: &RouteNetlinkMessage) -> Option<u32> {
    let RouteNetlinkMessage::NewLink(msg) = reply else {
        return None;
    };
    msg.attributes.iter().find_map(|a| match a {
        LinkAttribute::LinkInfo(infos) => infos.iter().find_map(|i| match i {
            LinkInfo::Data(InfoData::Vrf(vrf)) => vrf.iter().find_map(|v| match v {
                InfoVrf::TableId(t) => Some(*t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use crate::testing::TempNetns;

    /// On a kernel with VRF support it creates one; on one without, the
    /// error names the missing support. Either way the namespace is left
    /// without a new link on failure.
    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_vrf_is_created_with_its_table_or_the_missing_support_is_named() {
        let ns = TempNetns::new("vrf").unwrap();
        let mut nl = ns.socket().unwrap();
        match nl.add_vrf("blue", 1001) {
            Ok(vrf) => {
                assert!(vrf.up);
                assert_eq!(nl.vrf_table("blue").unwrap(), Some(1001));
                ns.add_veth("eth0", "peer0", None).unwrap();
                assert_eq!(nl.vrf_table("eth0").unwrap(), None);
            }
            Err(e) => {
                assert_eq!(e.errno(), Some(nix::errno::Errno::EOPNOTSUPP as i32), "{e}");
                assert!(
                    e.to_string().contains("the kernel has no vrf support"),
                    "{e}"
                );
                assert!(nl.find_link("blue").unwrap().is_none());
            }
        }
    }
}
