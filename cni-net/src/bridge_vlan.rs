//! VLANs of a bridge and its ports (802.1Q filtering inside the bridge),
//! like `ip link set BR type bridge vlan_filtering 1` and `bridge vlan
//! add|del|show`. Kernels built without `CONFIG_BRIDGE_VLAN_FILTERING`
//! refuse each of these with `EOPNOTSUPP`.

use netlink_packet_core::NLM_F_CREATE;
use netlink_packet_route::link::{
    AfSpecBridge, BridgeFlag, BridgeVlanInfo, BridgeVlanInfoFlags, InfoBridge, InfoData, InfoKind,
    LinkAttribute, LinkExtentMask, LinkInfo, LinkMessage,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::link::link_message;
use crate::{NetError, Netlink, Op};

/// The lowest and highest VLAN ID a port can carry (0 and 4095 are
/// reserved by 802.1Q).
pub const VLAN_IDS: std::ops::RangeInclusive<u16> = 1..=4094;

/// One VLAN of a bridge port, as `bridge vlan show` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortVlan {
    /// The VLAN ID, in [`VLAN_IDS`].
    pub vid: u16,
    /// Untagged frames entering the port belong to this VLAN (`pvid`).
    pub pvid: bool,
    /// Frames of this VLAN leave the port untagged (`untagged`).
    pub untagged: bool,
}

impl PortVlan {
    /// A VLAN the port carries tagged, as a trunk does.
    pub fn tagged(vid: u16) -> PortVlan {
        PortVlan {
            vid,
            pvid: false,
            untagged: false,
        }
    }

    /// The port's native VLAN: untagged frames in and out belong to it
    /// (`bridge vlan add vid VID dev PORT pvid untagged`).
    pub fn native(vid: u16) -> PortVlan {
        PortVlan {
            vid,
            pvid: true,
            untagged: true,
        }
    }

    fn flags(self) -> BridgeVlanInfoFlags {
        let mut flags = BridgeVlanInfoFlags::empty();
        if self.pvid {
            flags |= BridgeVlanInfoFlags::Pvid;
        }
        if self.untagged {
            flags |= BridgeVlanInfoFlags::Untagged;
        }
        flags
    }
}

/// Sorted, distinct VLAN IDs as inclusive ranges of consecutive IDs:
/// `[1, 2, 3, 7]` is `[(1, 3), (7, 7)]`. A trunk of 4094 VLANs is then one
/// netlink attribute pair instead of 4094 requests.
pub fn vlan_ranges(vids: &[u16]) -> Vec<(u16, u16)> {
    let mut ranges: Vec<(u16, u16)> = Vec::new();
    for &vid in vids {
        match ranges.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(vid) => *end = vid,
            Some((_, end)) if *end >= vid => {}
            _ => ranges.push((vid, vid)),
        }
    }
    ranges
}

impl Netlink {
    /// Turns VLAN filtering of bridge `bridge` on or off; with it on, a
    /// port forwards only the VLANs it was given (a new port gets the
    /// bridge's default, VLAN 1 untagged).
    ///
    /// Like `ip link set BR type bridge vlan_filtering 1`; Go:
    /// `netlink.Bridge{VlanFiltering: &true}` at `LinkAdd`.
    pub fn set_vlan_filtering(&mut self, bridge: u32, on: bool) -> Result<(), NetError> {
        let mut msg = link_message(bridge);
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Bridge),
            LinkInfo::Data(InfoData::Bridge(vec![InfoBridge::VlanFiltering(on)])),
        ]));
        self.change(RouteNetlinkMessage::NewLink(msg), 0)
            .map_err(|e| NetError::kernel(Op::SetVlanFiltering, self.label(bridge))(e))
    }

    /// Whether bridge `bridge` filters by VLAN.
    pub fn vlan_filtering(&mut self, bridge: u32) -> Result<bool, NetError> {
        let replies = self
            .get(RouteNetlinkMessage::GetLink(link_message(bridge)))
            .map_err(NetError::kernel(Op::LookUpLink, format!("#{bridge}")))?;
        Ok(replies.iter().any(|r| match r {
            RouteNetlinkMessage::NewLink(link) => link.attributes.iter().any(|a| {
                matches!(a, LinkAttribute::LinkInfo(infos) if infos.iter().any(|i| matches!(
                    i,
                    LinkInfo::Data(InfoData::Bridge(opts))
                        if opts.contains(&InfoBridge::VlanFiltering(true))
                )))
            }),
            _ => false,
        }))
    }

    /// Adds VLANs to bridge port `port` in one request: each of `vlans`
    /// with its flags, and each of `trunk`'s ranges tagged.
    ///
    /// Like `bridge vlan add vid VID dev PORT [pvid] [untagged] master`
    /// (and `vid MIN-MAX` for a range); Go: `netlink.BridgeVlanAdd(link,
    /// vid, pvid, untagged, false, true)`, once per VLAN.
    pub fn add_port_vlans(
        &mut self,
        port: u32,
        vlans: &[PortVlan],
        trunk: &[(u16, u16)],
    ) -> Result<(), NetError> {
        let msg = vlan_message(port, vlans, trunk);
        self.change(RouteNetlinkMessage::SetLink(msg), NLM_F_CREATE)
            .map_err(|e| NetError::kernel(Op::AddPortVlan, self.label(port))(e))
    }

    /// Removes VLANs from bridge port `port`, as [`Netlink::add_port_vlans`]
    /// names them.
    ///
    /// Like `bridge vlan del vid VID dev PORT master`; Go:
    /// `netlink.BridgeVlanDel`.
    pub fn delete_port_vlans(&mut self, port: u32, vlans: &[PortVlan]) -> Result<(), NetError> {
        let msg = vlan_message(port, vlans, &[]);
        self.change(RouteNetlinkMessage::DelLink(msg), 0)
            .map_err(|e| NetError::kernel(Op::DeletePortVlan, self.label(port))(e))
    }

    /// The VLANs of bridge port `port`, by ID; none when the bridge does
    /// not filter by VLAN.
    ///
    /// Like `bridge vlan show dev PORT`; Go: `netlink.BridgeVlanList`.
    pub fn port_vlans(&mut self, port: u32) -> Result<Vec<PortVlan>, NetError> {
        let mut msg = LinkMessage::default();
        msg.header.interface_family = AddressFamily::Bridge;
        msg.attributes
            .push(LinkAttribute::ExtMask(vec![LinkExtentMask::Brvlan]));
        let replies = self
            .dump(RouteNetlinkMessage::GetLink(msg))
            .map_err(NetError::kernel(Op::List, "bridge port VLANs"))?;
        let mut vlans = Vec::new();
        for reply in &replies {
            let RouteNetlinkMessage::NewLink(link) = reply else {
                continue;
            };
            if link.header.index != port {
                continue;
            }
            for attr in &link.attributes {
                let LinkAttribute::AfSpecBridge(spec) = attr else {
                    continue;
                };
                vlans.extend(spec.iter().filter_map(|s| match s {
                    AfSpecBridge::VlanInfo(info) => Some(PortVlan {
                        vid: info.vid,
                        pvid: info.flags.contains(BridgeVlanInfoFlags::Pvid),
                        untagged: info.flags.contains(BridgeVlanInfoFlags::Untagged),
                    }),
                    _ => None,
                }));
            }
        }
        vlans.sort();
        vlans.dedup();
        Ok(vlans)
    }
}

/// An `AF_BRIDGE` link message for the port's master (the bridge), with
/// one `IFLA_BRIDGE_VLAN_INFO` per VLAN and a begin/end pair per range.
fn vlan_message(port: u32, vlans: &[PortVlan], trunk: &[(u16, u16)]) -> LinkMessage {
    let mut msg = link_message(port);
    msg.header.interface_family = AddressFamily::Bridge;
    let mut spec = vec![AfSpecBridge::Flags(BridgeFlag::Controller)];
    for vlan in vlans {
        spec.push(AfSpecBridge::VlanInfo(BridgeVlanInfo {
            flags: vlan.flags(),
            vid: vlan.vid,
        }));
    }
    for &(begin, end) in trunk {
        if begin == end {
            spec.push(AfSpecBridge::VlanInfo(BridgeVlanInfo {
                flags: BridgeVlanInfoFlags::empty(),
                vid: begin,
            }));
            continue;
        }
        for (flags, vid) in [
            (BridgeVlanInfoFlags::RangeBegin, begin),
            (BridgeVlanInfoFlags::RangeEnd, end),
        ] {
            spec.push(AfSpecBridge::VlanInfo(BridgeVlanInfo { flags, vid }));
        }
    }
    msg.attributes.push(LinkAttribute::AfSpecBridge(spec));
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trunk_of_consecutive_ids_is_sent_as_ranges() {
        assert_eq!(
            vlan_ranges(&[1, 2, 3, 7, 9, 10]),
            vec![(1, 3), (7, 7), (9, 10)]
        );
        assert_eq!(vlan_ranges(&[4094]), vec![(4094, 4094)]);
        assert_eq!(vlan_ranges(&[]), Vec::<(u16, u16)>::new());
        let all: Vec<u16> = VLAN_IDS.collect();
        assert_eq!(vlan_ranges(&all), vec![(1, 4094)]);
    }

    #[test]
    fn a_range_is_a_begin_and_an_end_entry_after_the_native_vlan() {
        let msg = vlan_message(7, &[PortVlan::native(10)], &[(20, 30), (40, 40)]);
        assert_eq!(msg.header.interface_family, AddressFamily::Bridge);
        let LinkAttribute::AfSpecBridge(spec) = &msg.attributes[0] else {
            panic!("{msg:?}");
        };
        let entry = |flags, vid| AfSpecBridge::VlanInfo(BridgeVlanInfo { flags, vid });
        assert_eq!(
            spec,
            &vec![
                AfSpecBridge::Flags(BridgeFlag::Controller),
                entry(
                    BridgeVlanInfoFlags::Pvid | BridgeVlanInfoFlags::Untagged,
                    10
                ),
                entry(BridgeVlanInfoFlags::RangeBegin, 20),
                entry(BridgeVlanInfoFlags::RangeEnd, 30),
                entry(BridgeVlanInfoFlags::empty(), 40),
            ]
        );
    }
}
