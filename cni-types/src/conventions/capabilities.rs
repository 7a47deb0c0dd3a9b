//! `runtimeConfig`: the values a runtime fills in for the capabilities a
//! plugin declares (CONVENTIONS.md), read typed.

use std::net::IpAddr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::typed;
use crate::{Error, Extra, IpNetwork};

/// `runtimeConfig`: values the runtime filled in for the plugin's
/// `capabilities`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RuntimeConfig(pub Extra);

/// A `portMappings` entry: "{ "hostPort": 8080, "containerPort": 80,
/// "protocol": "tcp" }".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortMapping {
    /// Port on the host.
    #[serde(rename = "hostPort")]
    pub host_port: u16,
    /// Port in the container.
    #[serde(rename = "containerPort")]
    pub container_port: u16,
    /// `tcp`, `udp`, `sctp`.
    #[serde(default)]
    pub protocol: String,
    /// Host address to bind, when given; `""`, as containerd sends for
    /// "every address", is none.
    #[serde(
        rename = "hostIP",
        default,
        deserialize_with = "crate::serde_util::empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub host_ip: Option<IpAddr>,
}

/// An `ipRanges` entry: the same as a host-local range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpRange {
    /// The subnet to allocate from.
    pub subnet: IpNetwork,
    /// First allocatable address.
    #[serde(
        rename = "rangeStart",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub range_start: Option<IpAddr>,
    /// Last allocatable address.
    #[serde(rename = "rangeEnd", default, skip_serializing_if = "Option::is_none")]
    pub range_end: Option<IpAddr>,
    /// Gateway of the subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
}

/// The `bandwidth` capability: rates in bits per second, bursts in bits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Ingress rate.
    #[serde(rename = "ingressRate", default)]
    pub ingress_rate: u64,
    /// Ingress burst.
    #[serde(rename = "ingressBurst", default)]
    pub ingress_burst: u64,
    /// Egress rate.
    #[serde(rename = "egressRate", default)]
    pub egress_rate: u64,
    /// Egress burst.
    #[serde(rename = "egressBurst", default)]
    pub egress_burst: u64,
}

/// The `dns` capability: "a list of `servers`, a list of `searches`, a list
/// of `options`".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeDns {
    /// Nameservers.
    #[serde(default)]
    pub servers: Vec<String>,
    /// Search domains.
    #[serde(default)]
    pub searches: Vec<String>,
    /// Resolver options.
    #[serde(default)]
    pub options: Vec<String>,
}

impl RuntimeConfig {
    /// `portMappings`.
    pub fn port_mappings(&self) -> Result<Option<Vec<PortMapping>>, Error> {
        typed("runtimeConfig", &self.0, "portMappings")
    }
    /// `ipRanges`: the outer list is one allocation each, the inner a pool.
    pub fn ip_ranges(&self) -> Result<Option<Vec<Vec<IpRange>>>, Error> {
        typed("runtimeConfig", &self.0, "ipRanges")
    }
    /// `bandwidth`.
    pub fn bandwidth(&self) -> Result<Option<Bandwidth>, Error> {
        typed("runtimeConfig", &self.0, "bandwidth")
    }
    /// `dns`.
    pub fn dns(&self) -> Result<Option<RuntimeDns>, Error> {
        typed("runtimeConfig", &self.0, "dns")
    }
    /// `mac`: the MAC address the runtime wants on the interface.
    pub fn mac(&self) -> Result<Option<String>, Error> {
        typed("runtimeConfig", &self.0, "mac")
    }
    /// `ips`: requested addresses (`<ip>[/<prefix>]`).
    pub fn ips(&self) -> Result<Option<Vec<String>>, Error> {
        typed("runtimeConfig", &self.0, "ips")
    }
    /// Any other capability, typed by the caller.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, Error> {
        typed("runtimeConfig", &self.0, key)
    }
    /// The value of a capability as given, its key found with Go's rules
    /// (as Go's decoder finds them: the exact spelling, else another case;
    /// `null` as absent), for a caller that reads it by hand.
    pub fn value(&self, key: &str) -> Option<&Value> {
        crate::go_fields::get(&self.0, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    #[test]
    fn conventions_read_typed_and_malformed_ones_name_the_key() {
        let rc: RuntimeConfig = serde_json::from_value(serde_json::json!({
            "portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
            "mac": "c2:11:22:33:44:55",
            "bandwidth": {"ingressRate": "fast"}
        }))
        .unwrap();
        assert_eq!(rc.port_mappings().unwrap().unwrap()[0].host_port, 8080);
        assert_eq!(rc.mac().unwrap().unwrap(), "c2:11:22:33:44:55");
        assert!(rc.ip_ranges().unwrap().is_none());
        let e = rc.bandwidth().unwrap_err();
        assert_eq!(e.code, Code::INVALID_NETWORK_CONFIG);
        assert!(e.msg.contains("runtimeConfig.bandwidth"));
    }

    #[test]
    fn containerds_go_style_capability_arguments_are_read_as_the_reference_reads_them() {
        // What containerd's CRI puts in runtimeConfig: Go field names, and a
        // null annotation map beside the capabilities.
        let rc: RuntimeConfig = serde_json::from_value(serde_json::json!({
            "portMappings": [{"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""}],
            "bandwidth": {"IngressRate": 1000000, "IngressBurst": 4294967295u64,
                          "EgressRate": 2000000, "EgressBurst": 4294967295u64},
            "dns": {"Servers": ["10.96.0.10"], "Searches": ["svc.cluster.local"], "Options": ["ndots:5"]},
            "io.kubernetes.cri.pod-annotations": null
        }))
        .unwrap();
        assert_eq!(
            rc.port_mappings().unwrap().unwrap(),
            [PortMapping {
                host_port: 8080,
                container_port: 80,
                protocol: "tcp".into(),
                host_ip: None
            }]
        );
        let bw = rc.bandwidth().unwrap().unwrap();
        assert_eq!((bw.ingress_rate, bw.egress_burst), (1000000, 4294967295));
        let dns = rc.dns().unwrap().unwrap();
        assert_eq!(
            (dns.servers, dns.searches, dns.options),
            (
                vec!["10.96.0.10".to_owned()],
                vec!["svc.cluster.local".to_owned()],
                vec!["ndots:5".to_owned()]
            )
        );
        let annotations: Option<Extra> = rc.get("io.kubernetes.cri.pod-annotations").unwrap();
        assert!(annotations.is_none());
        // The capability's own key in another case, as Go matches it too.
        let rc: RuntimeConfig = serde_json::from_value(
            serde_json::json!({"PortMappings": [{"hostPort": 1, "containerPort": 2}]}),
        )
        .unwrap();
        assert_eq!(rc.port_mappings().unwrap().unwrap()[0].host_port, 1);
    }
}
