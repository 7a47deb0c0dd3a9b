//! The bridge's VLANs: a port's VLANs ([`set_port_vlans`]) and the
//! gateway of a VLAN ([`ensure_vlan_gateway`]).
//!
//! The gateway of a VLAN: with `isGateway` and `vlan`, the subnet's
//! gateway address cannot go on the bridge (its own frames are in VLAN
//! 1), so it goes on a veth `BRIDGE.VLAN` whose peer is a port of that
//! VLAN. All containers of the VLAN share it, so DEL leaves it, as the
//! reference does.
//!
//! Go: bridge `ensureVlanInterface`.

use cni_net::{host_veth_names, vlan_ranges, Link, Netlink, PortVlan, VethPair};
use cni_skel::BoxError;

use super::config::{gateway_name, Vlans};

/// The port's VLANs as the reference sets them: the ones it had on joining
/// removed (unless `preserveDefaultVlan`), then `vlan` native and the
/// trunk tagged in one request, then a trunk's native VLAN 1 when `vlan`
/// names none.
///
/// Go: the VLAN half of bridge `setupVeth`, and `removeDefaultVlan`.
pub(super) fn set_port_vlans(host: &mut Netlink, port: u32, vlans: &Vlans) -> Result<(), BoxError> {
    if vlans.remove_default {
        let joined = host.port_vlans(port)?;
        if !joined.is_empty() {
            host.delete_port_vlans(port, &joined)?;
        }
    }
    let native: Vec<PortVlan> = vlans.vlan.into_iter().map(PortVlan::native).collect();
    host.add_port_vlans(port, &native, &vlan_ranges(&vlans.trunk))?;
    if let Some(vid) = vlans.trunk_native() {
        host.add_port_vlans(port, &[PortVlan::native(vid)], &[])?;
    }
    Ok(())
}

/// The gateway link of VLAN `vid` on `bridge`: found, or made as a veth
/// whose peer (named like a container's host end, from the bridge and
/// the gateway's name) is a port with `vid` native, both up.
pub(super) fn ensure_vlan_gateway(
    host: &mut Netlink,
    bridge: &Link,
    vid: u16,
    preserve_default_vlan: bool,
) -> Result<Link, BoxError> {
    let name = gateway_name(&bridge.name, vid)?;
    if let Some(link) = host.find_link(name.as_str())? {
        return Ok(link);
    }
    let mut taken = None;
    for port_name in host_veth_names(&bridge.name, &name) {
        let pair = VethPair {
            name: &port_name,
            peer_name: &name,
            peer_netns: None,
            mtu: Some(bridge.mtu),
            peer_mac: None,
            master: None,
        };
        match host.add_veth(&pair) {
            Ok(port) => {
                let vlans = Vlans {
                    vlan: Some(vid),
                    trunk: Vec::new(),
                    remove_default: !preserve_default_vlan,
                };
                let made = attach(host, bridge, &port, &vlans, &name);
                if made.is_err() {
                    let _ = host.delete_link_if_present(port.index);
                }
                return made;
            }
            // Another ADD made the gateway meanwhile: use it.
            Err(e) if e.is_exists() => match host.find_link(name.as_str())? {
                Some(link) => return Ok(link),
                None => taken = Some(e),
            },
            Err(e) => return Err(e.into()),
        }
    }
    Err(taken.map_or_else(|| "no free host veth name".into(), Into::into))
}

/// The port on the bridge in its VLAN and up, then the gateway link up.
fn attach(
    host: &mut Netlink,
    bridge: &Link,
    port: &Link,
    vlans: &Vlans,
    name: &str,
) -> Result<Link, BoxError> {
    host.set_master(port.index, Some(bridge.index))?;
    set_port_vlans(host, port.index, vlans)?;
    host.set_up(port.index)?;
    let gateway = host.link(name)?;
    host.set_up(gateway.index)?;
    Ok(host.link(name)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_is_named_bridge_dot_vlan_and_a_name_too_long_names_vlan() {
        assert_eq!(gateway_name("cni0", 10).unwrap(), "cni0.10");
        let err = gateway_name("a-long-bridge0", 4094).unwrap_err();
        assert_eq!(err.msg, "invalid vlan");
    }
}
