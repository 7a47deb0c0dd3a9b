//! Bridges and their ports, like `ip link add type bridge` and `ip link
//! set master`. A bridge's own address (the gateway of its containers)
//! is added as any link's, with [`Netlink::add_address`].

use std::io;
use std::ops::ControlFlow;

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
use netlink_packet_route::link::{
    InfoBridge, InfoBridgePort, InfoData, InfoKind, InfoPortData, InfoPortKind, LinkAttribute,
    LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::RouteNetlinkMessage;

use crate::link::{link_message, link_of, without_stats};
use crate::{Link, LinkKind, NetError, Netlink, Op};

/// What [`Netlink::set_port`] sets of a bridge port in one request.
///
/// Go: the reference bridge sends one request each
/// (`netlink.LinkSetHairpin`, `LinkSetIsolated`, `LinkSetUp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortSettings {
    /// Hairpin mode ([`Netlink::set_hairpin`]); left as it is when `None`.
    pub hairpin: Option<bool>,
    /// Port isolation ([`Netlink::set_isolated`]); left as it is when
    /// `None`.
    pub isolated: Option<bool>,
    /// Whether to bring the port up once its options are set.
    pub up: bool,
}

impl Netlink {
    /// The bridge named `name`, created (with `mtu` when given) when there
    /// is none; a link of that name that is not a bridge is an error.
    ///
    /// Go: `ensureBridge` of the reference bridge plugin.
    pub fn ensure_bridge(&mut self, name: &str, mtu: Option<u32>) -> Result<Link, NetError> {
        self.ensure_bridge_filtering(name, mtu, false)
    }

    /// [`Netlink::ensure_bridge`], with VLAN filtering on: set as the
    /// bridge is created, or turned on when it exists. A kernel without
    /// bridge VLAN filtering refuses before a new bridge exists.
    ///
    /// Like `ip link add NAME type bridge vlan_filtering 1`; Go:
    /// `ensureBridge(.., vlanFiltering)` of the reference bridge plugin,
    /// which sets it only on a bridge it creates.
    pub fn ensure_vlan_bridge(&mut self, name: &str, mtu: Option<u32>) -> Result<Link, NetError> {
        let bridge = self.ensure_bridge_filtering(name, mtu, true)?;
        if !self.vlan_filtering(bridge.index)? {
            self.set_vlan_filtering(bridge.index, true)?;
        }
        Ok(bridge)
    }

    fn ensure_bridge_filtering(
        &mut self,
        name: &str,
        mtu: Option<u32>,
        vlan_filtering: bool,
    ) -> Result<Link, NetError> {
        if let Some(link) = self.find_link(name)? {
            if link.kind != Some(LinkKind::Bridge) {
                return Err(NetError::Kernel {
                    op: Op::UseAsBridge,
                    object: format!("{name:?} as a bridge"),
                    source: io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "a link of that name exists and is a {}",
                            link.kind
                                .as_ref()
                                .map_or("device without a kind", LinkKind::as_str)
                        ),
                    ),
                });
            }
            return Ok(link);
        }
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        if let Some(mtu) = mtu {
            msg.attributes.push(LinkAttribute::Mtu(mtu));
        }
        let mut info = vec![LinkInfo::Kind(InfoKind::Bridge)];
        if vlan_filtering {
            info.push(LinkInfo::Data(InfoData::Bridge(vec![
                InfoBridge::VlanFiltering(true),
            ])));
        }
        msg.attributes.push(LinkAttribute::LinkInfo(info));
        match self.change(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL) {
            // Another plugin run created it meanwhile: use it.
            Err(e) if e.raw_os_error() != Some(nix::errno::Errno::EEXIST as i32) => {
                return Err(NetError::kernel(Op::CreateBridge, format!("{name:?}"))(e))
            }
            _ => {}
        }
        self.link(name)
    }

    /// Makes link `port` a port of the bridge `bridge` (`None`: of no
    /// bridge).
    ///
    /// Like `ip link set PORT master BRIDGE`; Go: `netlink.LinkSetMaster`.
    pub fn set_master(&mut self, port: u32, bridge: Option<u32>) -> Result<(), NetError> {
        let mut msg = link_message(port);
        msg.attributes
            .push(LinkAttribute::Controller(bridge.unwrap_or(0)));
        self.set_link(msg, Op::SetMaster)
    }

    /// Whether the bridge (or VRF, or any master) at index `bridge` has a
    /// port whose name is not among `except`: the question "is this the
    /// last container on the bridge?" that a DEL asks of its own ports.
    ///
    /// The kernel lists only the bridge's ports (a link dump filtered by
    /// `IFLA_MASTER`), and reading stops at the first port not among
    /// `except`, so a bridge of three hundred containers costs what one
    /// of three does. Stopping a dump midway ends its socket, which is
    /// why this consumes the `Netlink` (open another for what follows).
    ///
    /// Like `ip link show master BRIDGE`, read until the first answer.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), cni_net::NetError> {
    /// use cni_net::Netlink;
    /// let mut nl = Netlink::open()?;
    /// if let Some(bridge) = nl.find_link("cni0")? {
    ///     let last = !nl.has_port_besides(bridge.index, &["veth1234".to_string()])?;
    ///     println!("veth1234 is cni0's last port: {last}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn has_port_besides(self, bridge: u32, except: &[String]) -> Result<bool, NetError> {
        let mut msg = LinkMessage::default();
        msg.attributes.push(LinkAttribute::Controller(bridge));
        let found = self
            .dump_until(RouteNetlinkMessage::GetLink(without_stats(msg)), |reply| {
                match link_of(&reply) {
                    // The kernel's filter is honoured since 4.15; the
                    // master is checked here too, for kernels before it.
                    Some(port) if port.master == Some(bridge) && !except.contains(&port.name) => {
                        ControlFlow::Break(())
                    }
                    _ => ControlFlow::Continue(()),
                }
            })
            .map_err(NetError::kernel(
                Op::List,
                format!("the ports of #{bridge}"),
            ))?;
        Ok(found.is_some())
    }

    /// Sets hairpin mode of a bridge port (traffic may leave by the port
    /// it came in).
    ///
    /// Like `ip link set PORT type bridge_slave hairpin on`; Go:
    /// `netlink.LinkSetHairpin`.
    pub fn set_hairpin(&mut self, port: u32, on: bool) -> Result<(), NetError> {
        self.set_port_option(port, InfoBridgePort::HairpinMode(on), Op::SetHairpin)
    }

    /// Whether hairpin mode is on for a bridge port.
    pub fn hairpin(&mut self, port: u32) -> Result<bool, NetError> {
        self.has_port_option(port, InfoBridgePort::HairpinMode(true))
    }

    /// Isolates a bridge port, or ends its isolation: an isolated port
    /// exchanges frames only with ports that are not isolated (the
    /// bridge's uplink, a gateway), never with another isolated one.
    ///
    /// Like `ip link set PORT type bridge_slave isolated on` (`bridge link
    /// set dev PORT isolated on`); Go: `netlink.LinkSetIsolated`.
    pub fn set_isolated(&mut self, port: u32, on: bool) -> Result<(), NetError> {
        self.set_port_option(port, InfoBridgePort::Isolated(on), Op::SetIsolated)
    }

    /// Whether a bridge port is isolated.
    pub fn isolated(&mut self, port: u32) -> Result<bool, NetError> {
        self.has_port_option(port, InfoBridgePort::Isolated(true))
    }

    /// Sets a bridge port's options and, with `up`, brings it up, in one
    /// request: the kernel applies the port's options before its flags,
    /// so the port carries nothing before hairpin mode and isolation are
    /// as asked (the reference's order). One request instead of three,
    /// each of which waits for the kernel's link lock.
    ///
    /// Like `ip link set PORT up type bridge_slave hairpin on isolated on`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), cni_net::NetError> {
    /// use cni_net::{Netlink, PortSettings};
    /// let mut nl = Netlink::open()?;
    /// let port = nl.link("veth1234")?;
    /// let settings = PortSettings { hairpin: Some(true), up: true, ..Default::default() };
    /// nl.set_port(port.index, &settings)?;
    /// # Ok(()) }
    /// ```
    pub fn set_port(&mut self, port: u32, settings: &PortSettings) -> Result<(), NetError> {
        let mut msg = link_message(port);
        let options: Vec<InfoBridgePort> = [
            settings.hairpin.map(InfoBridgePort::HairpinMode),
            settings.isolated.map(InfoBridgePort::Isolated),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !options.is_empty() {
            msg.attributes.push(LinkAttribute::LinkInfo(vec![
                LinkInfo::PortKind(InfoPortKind::Bridge),
                LinkInfo::PortData(InfoPortData::BridgePort(options)),
            ]));
        }
        if settings.up {
            msg.header.flags = LinkFlags::Up;
            msg.header.change_mask = LinkFlags::Up;
        }
        self.change(RouteNetlinkMessage::NewLink(msg), 0)
            .map_err(|e| NetError::kernel(Op::SetPort, self.label(port))(e))
    }

    fn set_port_option(
        &mut self,
        port: u32,
        option: InfoBridgePort,
        op: Op,
    ) -> Result<(), NetError> {
        let mut msg = link_message(port);
        msg.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::PortKind(InfoPortKind::Bridge),
            LinkInfo::PortData(InfoPortData::BridgePort(vec![option])),
        ]));
        // Port settings go through RTM_NEWLINK on the existing link. The
        // port's name is looked up for an error only.
        self.change(RouteNetlinkMessage::NewLink(msg), 0)
            .map_err(|e| NetError::kernel(op, self.label(port))(e))
    }

    fn has_port_option(&mut self, port: u32, option: InfoBridgePort) -> Result<bool, NetError> {
        let msg = without_stats(link_message(port));
        let replies = self
            .get(RouteNetlinkMessage::GetLink(msg))
            .map_err(NetError::kernel(Op::LookUpLink, format!("#{port}")))?;
        Ok(replies.iter().any(|r| match r {
            RouteNetlinkMessage::NewLink(link) => link.attributes.iter().any(|a| {
                matches!(a, LinkAttribute::LinkInfo(infos) if infos.iter().any(|i| matches!(
                    i,
                    LinkInfo::PortData(InfoPortData::BridgePort(opts)) if opts.contains(&option)
                )))
            }),
            _ => false,
        }))
    }
}
