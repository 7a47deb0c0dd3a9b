//! The bridge's configuration, validated before anything changes.

use cni_net::{PortVlan, VLAN_IDS};
use cni_netfilter::{masquerade, BackendKind};
use cni_types::{Code, Error};
use serde::Deserialize;

use super::{Req, DEFAULT_BRIDGE};

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// The bridge's name.
    #[serde(default)]
    pub bridge: Option<String>,
    /// Put the gateway address on the bridge.
    #[serde(rename = "isGateway", default)]
    pub is_gateway: bool,
    /// Route the container's default traffic through the bridge (implies
    /// `isGateway`).
    #[serde(rename = "isDefaultGateway", default)]
    pub is_default_gateway: bool,
    /// Replace another IPv4 address on the bridge instead of failing.
    #[serde(rename = "forceAddress", default)]
    pub force_address: bool,
    /// MTU of the bridge and both ends of the pair; 0, as the reference's
    /// Go structs always write it, means the kernel's default.
    #[serde(default)]
    pub mtu: Option<u32>,
    /// Let traffic leave a port and come back on it.
    #[serde(rename = "hairpinMode", default)]
    pub hairpin_mode: bool,
    /// Promiscuous mode on the bridge.
    #[serde(rename = "promiscMode", default)]
    pub promisc_mode: bool,
    /// Masquerade the container's traffic to outside its subnets (with
    /// IPAM only, as the reference).
    #[serde(rename = "ipMasq", default)]
    pub ip_masq: bool,
    /// `"iptables"` or `"nftables"`; absent, the reference's choice
    /// ([`cni_netfilter::choose`]).
    #[serde(rename = "ipMasqBackend", default)]
    pub ip_masq_backend: Option<String>,
    /// IPv6 duplicate address detection in the container (off otherwise):
    /// `accept_dad` and `enhanced_dad` on.
    #[serde(rename = "enabledad", default)]
    pub enable_dad: bool,
    /// The container port's VLAN (native: untagged in and out); 0 is
    /// none. Turns on the bridge's VLAN filtering.
    #[serde(default)]
    pub vlan: i64,
    /// VLANs the container port also carries tagged: single IDs and
    /// ranges. Present (even empty), it turns on VLAN filtering.
    #[serde(rename = "vlanTrunk", default)]
    pub vlan_trunk: Option<Vec<VlanTrunk>>,
    /// With `vlan` or `vlanTrunk`, keep the port's default VLAN (1)
    /// instead of removing it.
    #[serde(rename = "preserveDefaultVlan", default)]
    pub preserve_default_vlan: bool,
    /// Drop frames from the container whose source MAC is not its
    /// interface's ([`cni_netfilter::macspoof`]).
    #[serde(default)]
    pub macspoofchk: bool,
    /// Isolate the container's port: it reaches the bridge's other,
    /// non-isolated ports, never another isolated one.
    #[serde(rename = "portIsolation", default)]
    pub port_isolation: bool,
    /// Leave the container's interface down (layer 2 only: no IPAM).
    #[serde(rename = "disableContainerInterface", default)]
    pub disable_container_interface: bool,
}

/// One entry of `vlanTrunk`: a single `id`, a range `minID`..=`maxID`,
/// or both.
///
/// Go: bridge `VlanTrunk`.
#[derive(Debug, Default, Deserialize)]
pub struct VlanTrunk {
    /// The range's first VLAN.
    #[serde(rename = "minID", default)]
    pub min_id: Option<i64>,
    /// The range's last VLAN.
    #[serde(rename = "maxID", default)]
    pub max_id: Option<i64>,
    /// A single VLAN.
    #[serde(default)]
    pub id: Option<i64>,
}

/// The validated configuration.
pub(super) struct Plan {
    /// `bridge`, else `cni0`.
    pub bridge: String,
    /// `ipam.type`; none for a layer-2 port.
    pub ipam: Option<String>,
    /// The bridge holds the gateways (`isGateway` or `isDefaultGateway`).
    pub gateway: bool,
    /// `mtu`, unless absent or 0 (see [`cni_net::configured_mtu`]).
    pub mtu: Option<u32>,
    /// `Some` with the backend asked for (`None`: the default) when
    /// `ipMasq` is on and there is IPAM.
    pub masquerade: Option<Option<BackendKind>>,
    /// The port's VLANs; `None` without `vlan` or `vlanTrunk` (no VLAN
    /// filtering).
    pub vlans: Option<Vlans>,
}

/// What `vlan`, `vlanTrunk` and `preserveDefaultVlan` ask of the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Vlans {
    /// The native VLAN (PVID, untagged): `vlan`. Without it, a trunk's
    /// native VLAN is 1, added after the trunk (the reference's backwards
    /// compatibility, [`Vlans::trunk_native`]).
    pub vlan: Option<u16>,
    /// The trunk's VLANs, tagged, sorted and distinct.
    pub trunk: Vec<u16>,
    /// Remove the VLANs the port had on joining the bridge (its default,
    /// 1) first: `vlan` or a trunk, without `preserveDefaultVlan`.
    pub remove_default: bool,
}

impl Vlans {
    /// The native VLAN a trunk gets when `vlan` names none.
    pub fn trunk_native(&self) -> Option<u16> {
        (self.vlan.is_none() && !self.trunk.is_empty()).then_some(1)
    }

    /// The VLANs the port ends up with, as ADD sends them: `vlan` native
    /// unless the trunk also lists it (sent after, it is tagged), the
    /// trunk tagged, then a trunk's native VLAN 1 over any trunk entry.
    pub fn expected(&self) -> Vec<PortVlan> {
        let mut want: Vec<PortVlan> = self
            .vlan
            .filter(|v| !self.trunk.contains(v))
            .map(PortVlan::native)
            .into_iter()
            .collect();
        let native = self.trunk_native();
        let tagged = self.trunk.iter().filter(|v| Some(**v) != native);
        want.extend(tagged.copied().map(PortVlan::tagged));
        want.extend(native.map(PortVlan::native));
        want.sort();
        want
    }
}

/// Validates the configuration for ADD, CHECK, GC and STATUS: code 7
/// naming the field for a bad value, before anything changes.
pub(super) fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    let bridge = f.bridge.clone().filter(|b| !b.is_empty());
    let bridge = bridge.unwrap_or_else(|| DEFAULT_BRIDGE.to_owned());
    cni_net::validate_ifname(&bridge).map_err(|e| Error::invalid_config("bridge", e))?;
    let mtu = cni_net::configured_mtu(f.mtu).map_err(|e| Error::invalid_config("mtu", e))?;
    if f.hairpin_mode && f.promisc_mode {
        return Err(Error::new(
            Code::INVALID_NETWORK_CONFIG,
            "cannot set hairpin mode and promiscuous mode at the same time",
        ));
    }
    let vlans = vlans(f)?;
    let backend = masquerade::requested_backend(f.ip_masq_backend.as_deref())?;
    let ipam = req.config.ipam_plugin().map(str::to_owned);
    if ipam.is_some() && f.disable_container_interface {
        return Err(Error::new(
            Code::INVALID_NETWORK_CONFIG,
            "disableContainerInterface: cannot use IPAM when DisableContainerInterface flag is set",
        ));
    }
    let gateway = f.is_gateway || f.is_default_gateway;
    if let Some(vid) = vlans.as_ref().and_then(|v| v.vlan).filter(|_| gateway) {
        gateway_name(&bridge, vid)?;
    }
    Ok(Plan {
        bridge,
        masquerade: (f.ip_masq && ipam.is_some()).then_some(backend),
        ipam,
        gateway,
        mtu,
        vlans,
    })
}

/// The port's VLANs, checked, when `vlan` or `vlanTrunk` asks for any.
fn vlans(f: &Fields) -> Result<Option<Vlans>, Error> {
    let vlan = vlan_id(f.vlan)?;
    let Some(trunk) = f.vlan_trunk.as_deref().map(trunk_ids).transpose()? else {
        return Ok(vlan.map(|vlan| Vlans {
            vlan: Some(vlan),
            trunk: Vec::new(),
            remove_default: !f.preserve_default_vlan,
        }));
    };
    let any = vlan.is_some() || !trunk.is_empty();
    Ok(Some(Vlans {
        vlan,
        remove_default: any && !f.preserve_default_vlan,
        trunk,
    }))
}

/// `vlan`, checked: `None` for 0.
fn vlan_id(vlan: i64) -> Result<Option<u16>, Error> {
    match vlan {
        0 => Ok(None),
        v => vlan_in_range(v).map(Some).ok_or_else(|| {
            Error::invalid_config(
                "vlan",
                format!("invalid VLAN ID {v} (must be between 0 and 4094)"),
            )
        }),
    }
}

fn vlan_in_range(v: i64) -> Option<u16> {
    u16::try_from(v).ok().filter(|v| VLAN_IDS.contains(v))
}

/// The trunk's VLAN IDs, sorted and distinct; an entry with neither an
/// ID nor a range adds nothing, as in the reference. Errors name
/// `vlanTrunk`, with the reference's reason as details.
///
/// Go: bridge `collectVlanTrunk`.
fn trunk_ids(trunk: &[VlanTrunk]) -> Result<Vec<u16>, Error> {
    let bad = |why: &str| Error::invalid_config("vlanTrunk", why);
    let mut ids = Vec::new();
    for item in trunk {
        match (item.min_id, item.max_id) {
            (Some(min), Some(max)) => {
                let min =
                    vlan_in_range(min).ok_or_else(|| bad("incorrect trunk minID parameter"))?;
                let max =
                    vlan_in_range(max).ok_or_else(|| bad("incorrect trunk maxID parameter"))?;
                if max < min {
                    return Err(bad("minID is greater than maxID in trunk parameter"));
                }
                ids.extend(min..=max);
            }
            (None, Some(_)) => {
                return Err(bad(
                    "minID and maxID should be configured simultaneously, minID is missing",
                ))
            }
            (Some(_), None) => {
                return Err(bad(
                    "minID and maxID should be configured simultaneously, maxID is missing",
                ))
            }
            (None, None) => {}
        }
        if let Some(id) = item.id {
            ids.push(vlan_in_range(id).ok_or_else(|| bad("incorrect trunk id parameter"))?);
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The gateway link's name, `BRIDGE.VLAN`: code 7 naming `vlan` when the
/// kernel would refuse it (over 15 bytes).
pub(super) fn gateway_name(bridge: &str, vid: u16) -> Result<String, Error> {
    let name = format!("{bridge}.{vid}");
    cni_net::validate_ifname(&name)
        .map_err(|e| Error::invalid_config("vlan", format!("its gateway link: {e}")))?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trunk(json: serde_json::Value) -> Result<Vec<u16>, String> {
        let items: Vec<VlanTrunk> = serde_json::from_value(json).unwrap();
        trunk_ids(&items).map_err(|e| e.details)
    }

    #[test]
    fn a_trunk_is_its_ids_and_ranges_sorted_once_each() {
        let ids = trunk(serde_json::json!([{"id": 7}, {"minID": 5, "maxID": 8}, {"id": 101}]));
        assert_eq!(ids, Ok(vec![5, 6, 7, 8, 101]));
        // An entry naming nothing adds nothing, as in the reference.
        assert_eq!(trunk(serde_json::json!([{}])), Ok(vec![]));
    }

    #[test]
    fn a_bad_trunk_entry_gets_the_references_reason() {
        for (json, why) in [
            (
                serde_json::json!([{"minID": 0, "maxID": 5}]),
                "incorrect trunk minID parameter",
            ),
            (
                serde_json::json!([{"minID": 1, "maxID": 4095}]),
                "incorrect trunk maxID parameter",
            ),
            (
                serde_json::json!([{"minID": 9, "maxID": 5}]),
                "minID is greater than maxID",
            ),
            (serde_json::json!([{"maxID": 5}]), "minID is missing"),
            (serde_json::json!([{"minID": 5}]), "maxID is missing"),
            (
                serde_json::json!([{"id": 4095}]),
                "incorrect trunk id parameter",
            ),
        ] {
            let err = trunk(json.clone()).unwrap_err();
            assert!(err.contains(why), "{json}: {err}");
        }
    }

    #[test]
    fn a_trunk_without_vlan_is_native_on_1_added_after_it() {
        let f: Fields =
            serde_json::from_value(serde_json::json!({"vlanTrunk": [{"id": 5}]})).unwrap();
        let v = vlans(&f).unwrap().unwrap();
        assert_eq!((v.vlan, v.trunk_native()), (None, Some(1)));
        assert!(v.remove_default);
        let f: Fields =
            serde_json::from_value(serde_json::json!({"vlan": 3, "vlanTrunk": [{"id": 5}],
                                                                  "preserveDefaultVlan": true}))
            .unwrap();
        let v = vlans(&f).unwrap().unwrap();
        assert_eq!((v.vlan, v.trunk_native()), (Some(3), None));
        assert!(!v.remove_default);
        // An empty trunk still asks for VLAN filtering, as in the reference.
        // (Its port keeps VLAN 1: nothing asks it away.)
        let f: Fields = serde_json::from_value(serde_json::json!({"vlanTrunk": []})).unwrap();
        assert_eq!(
            vlans(&f).unwrap(),
            Some(Vlans {
                vlan: None,
                trunk: vec![],
                remove_default: false
            })
        );
    }

    #[test]
    fn the_port_is_expected_to_end_as_the_kernel_leaves_it() {
        let vlans = |vlan, trunk: &[u16]| Vlans {
            vlan,
            trunk: trunk.to_vec(),
            remove_default: true,
        };
        let (n, t) = (PortVlan::native, PortVlan::tagged);
        assert_eq!(vlans(Some(10), &[]).expected(), vec![n(10)]);
        assert_eq!(vlans(Some(10), &[5]).expected(), vec![t(5), n(10)]);
        // The trunk is sent after `vlan`: a VLAN in both ends tagged.
        assert_eq!(vlans(Some(5), &[5, 6]).expected(), vec![t(5), t(6)]);
        // A trunk's native 1 is sent last: native even when listed.
        assert_eq!(vlans(None, &[1, 7]).expected(), vec![n(1), t(7)]);
    }
}
