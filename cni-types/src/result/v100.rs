//! Results of spec versions 1.0.0 and 1.1.0.

use std::net::IpAddr;

use cni_version::SpecVersion;
use serde::{Deserialize, Serialize};

use crate::{Dns, IpNetwork, Route};

/// A 1.0.0 or 1.1.0 result, the shape plugins build and manipulate.
///
/// ```
/// use cni_types::{CniResult, Result100, IpConfig, SpecVersion};
///
/// let mut r = Result100::new(SpecVersion::V1_0_0);
/// r.ips.push(IpConfig::new("10.1.0.5/16".parse().unwrap(), Some("10.1.0.1".parse().unwrap())));
/// let old = CniResult::from(r).convert_to(&SpecVersion::V0_2_0).unwrap();
/// let json: serde_json::Value = serde_json::from_slice(&old.to_json()).unwrap();
/// assert_eq!(json["ip4"]["ip"], "10.1.0.5/16");
/// ```
///
/// Go: `types100.Result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Result100 {
    /// 1.0.0 or 1.1.0.
    #[serde(rename = "cniVersion")]
    pub cni_version: SpecVersion,
    /// Interfaces created or configured.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
    /// Assigned addresses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<IpConfig>,
    /// Routes created.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// DNS settings; omitted when empty.
    #[serde(skip_serializing_if = "Dns::is_empty")]
    pub dns: Dns,
}

impl Result100 {
    /// An empty result of the given version.
    pub fn new(cni_version: SpecVersion) -> Result100 {
        Result100 {
            cni_version,
            interfaces: Vec::new(),
            ips: Vec::new(),
            routes: Vec::new(),
            dns: Dns::default(),
        }
    }

    /// The index in `interfaces` of the interface named `name`: the one in
    /// a sandbox when there are several (a chained plugin asks about the
    /// container side, `CNI_IFNAME`, and a host-side namesake is not it),
    /// else the first. The index is what [`IpConfig::interface`] holds.
    ///
    /// ```
    /// use cni_types::{Interface, Result100, SpecVersion};
    ///
    /// let mut r = Result100::new(SpecVersion::V1_1_0);
    /// r.interfaces.push(Interface::named("eth0"));
    /// r.interfaces.push(Interface { sandbox: "/run/netns/c1".into(), ..Interface::named("eth0") });
    /// assert_eq!(r.interface_index("eth0"), Some(1));
    /// assert_eq!(r.interface_index("eth1"), None);
    /// ```
    pub fn interface_index(&self, name: &str) -> Option<usize> {
        let named = |i: &&Interface| i.name == name;
        let mut matches = self.interfaces.iter().enumerate().filter(|(_, i)| named(i));
        let first = matches.next()?;
        if !first.1.sandbox.is_empty() {
            return Some(first.0);
        }
        Some(
            matches
                .find(|(_, i)| !i.sandbox.is_empty())
                .unwrap_or(first)
                .0,
        )
    }

    /// The result's addresses with their prefix, in order: what
    /// masquerading and firewall rules are made for.
    ///
    /// ```
    /// use cni_types::{IpConfig, Result100, SpecVersion};
    ///
    /// let mut r = Result100::new(SpecVersion::V1_0_0);
    /// r.ips.push(IpConfig::new("10.88.0.5/16".parse().unwrap(), None));
    /// assert_eq!(r.addresses(), ["10.88.0.5/16".parse().unwrap()]);
    /// ```
    pub fn addresses(&self) -> Vec<IpNetwork> {
        self.ips.iter().map(|ip| ip.address).collect()
    }

    /// The interface named `name` (see [`Result100::interface_index`]).
    ///
    /// ```
    /// use cni_types::{Interface, Result100, SpecVersion};
    ///
    /// let mut r = Result100::new(SpecVersion::V1_1_0);
    /// r.interfaces.push(Interface { mac: "0a:58:0a:01:00:05".into(), ..Interface::named("eth0") });
    /// assert_eq!(r.interface("eth0").unwrap().mac, "0a:58:0a:01:00:05");
    /// ```
    pub fn interface(&self, name: &str) -> Option<&Interface> {
        self.interfaces.get(self.interface_index(name)?)
    }

    /// The interface named `name`, to change (see
    /// [`Result100::interface_index`]).
    pub fn interface_mut(&mut self, name: &str) -> Option<&mut Interface> {
        let index = self.interface_index(name)?;
        self.interfaces.get_mut(index)
    }
}

/// An interface: "`name`: The name of the interface. `mac`: The hardware
/// address of the interface (if applicable). `sandbox`: The isolation
/// domain reference (e.g. path to network namespace) for the interface, or
/// empty if on the host." (spec, section 5). The other fields are new in
/// 1.1.0 and are dropped when a result is converted below 1.1.0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    /// Interface name.
    #[serde(default, deserialize_with = "crate::serde_util::null_as_default")]
    pub name: String,
    /// Hardware address, if applicable.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub mac: String,
    /// 1.1.0: "The MTU of the interface (if applicable)." 0 means unset.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::serde_util::nonzero"
    )]
    pub mtu: Option<u32>,
    /// Isolation domain (e.g. netns path); empty when on the host.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub sandbox: String,
    /// 1.1.0: "An absolute path to a socket file corresponding to this
    /// interface, if applicable."
    #[serde(
        rename = "socketPath",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub socket_path: String,
    /// 1.1.0: "The platform-specific identifier of the PCI device
    /// corresponding to this interface, if applicable."
    #[serde(
        rename = "pciID",
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub pci_id: String,
}

impl Interface {
    /// An interface with just a name.
    pub fn named(name: impl Into<String>) -> Interface {
        Interface {
            name: name.into(),
            ..Interface::default()
        }
    }

    /// The interface without its 1.1.0-only fields.
    pub(crate) fn without_1_1_fields(self) -> Interface {
        Interface {
            name: self.name,
            mac: self.mac,
            sandbox: self.sandbox,
            ..Interface::default()
        }
    }
}

/// An `ips` entry of a 1.x result: "`address` (string): an IP address in
/// CIDR notation (eg "192.168.1.3/24"). `gateway` (string): the default
/// gateway for this subnet, if one exists. `interface` (uint): the index
/// into the `interfaces` list for a CNI Plugin Result indicating which
/// interface this IP configuration should be applied to." (spec, section 5)
///
/// Go: `types100.IPConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig {
    /// Index into `interfaces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
    /// The address, in CIDR notation, host part kept.
    pub address: IpNetwork,
    /// The subnet's default gateway, if any.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::ip::opt_ip_serde"
    )]
    pub gateway: Option<IpAddr>,
}

impl IpConfig {
    /// An address with an optional gateway and no interface index.
    pub fn new(address: IpNetwork, gateway: Option<IpAddr>) -> IpConfig {
        IpConfig {
            interface: None,
            address,
            gateway,
        }
    }
}
