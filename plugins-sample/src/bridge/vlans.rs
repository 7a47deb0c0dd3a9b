//! The gateway of a VLAN: with `isGateway` and `vlan`, the subnet's
//! gateway address cannot go on the bridge (its own frames are in VLAN
//! 1), so it goes on a veth `BRIDGE.VLAN` whose peer is a port of that
//! VLAN. All containers of the VLAN share it, so DEL leaves it, as the
//! reference does.
//!
//! Go: bridge `ensureVlanInterface`.

use cni_net::{host_veth_names, Link, Netlink, VethPair};
use cni_skel::BoxError;
use cni_types::Error;

use super::config::Vlans;
use super::setup::set_port_vlans;

/// The gateway link's name, `BRIDGE.VLAN`: code 7 naming `vlan` when the
/// kernel would refuse it (over 15 bytes).
pub(super) fn gateway_name(bridge: &str, vid: u16) -> Result<String, Error> {
    let name = format!("{bridge}.{vid}");
    cni_net::validate_ifname(&name)
        .map_err(|e| Error::invalid_config("vlan", format!("its gateway link: {e}")))?;
    Ok(name)
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
