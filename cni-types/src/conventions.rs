//! The well-known capabilities and `args` conventions (CONVENTIONS.md), as
//! typed, optional views over the raw sections.
//!
//! The sections stay raw maps so that a plugin never fails on a convention
//! it does not use; a plugin that does use one asks for it typed and gets an
//! error naming the key when its value is malformed.

use std::net::IpAddr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Code, Error, Extra, IpNetwork};

/// `runtimeConfig`: values the runtime filled in for the plugin's
/// `capabilities`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RuntimeConfig(pub Extra);

/// `args`: optional runtime metadata; conventions live under `cni`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Args(pub Extra);

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
    /// Host address to bind, when given.
    #[serde(rename = "hostIP", default, skip_serializing_if = "Option::is_none")]
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

/// A `labels` entry under `args.cni`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// Label key.
    pub key: String,
    /// Label value.
    pub value: String,
}

/// Reads `map[key]` as `T`: `None` when absent or null, code 7 naming the
/// section, key and reason when malformed.
fn typed<T: DeserializeOwned>(section: &str, map: &Extra, key: &str) -> Option<Result<T, Error>> {
    match map.get(key)? {
        Value::Null => None,
        v => Some(T::deserialize(v).map_err(|e| {
            Error::new(
                Code::INVALID_NETWORK_CONFIG,
                format!("invalid {section}.{key}"),
            )
            .with_details(e.to_string())
        })),
    }
}

impl RuntimeConfig {
    /// `portMappings`.
    pub fn port_mappings(&self) -> Option<Result<Vec<PortMapping>, Error>> {
        typed("runtimeConfig", &self.0, "portMappings")
    }
    /// `ipRanges`: the outer list is one allocation each, the inner a pool.
    pub fn ip_ranges(&self) -> Option<Result<Vec<Vec<IpRange>>, Error>> {
        typed("runtimeConfig", &self.0, "ipRanges")
    }
    /// `bandwidth`.
    pub fn bandwidth(&self) -> Option<Result<Bandwidth, Error>> {
        typed("runtimeConfig", &self.0, "bandwidth")
    }
    /// `dns`.
    pub fn dns(&self) -> Option<Result<RuntimeDns, Error>> {
        typed("runtimeConfig", &self.0, "dns")
    }
    /// `mac`: the MAC address the runtime wants on the interface.
    pub fn mac(&self) -> Option<Result<String, Error>> {
        typed("runtimeConfig", &self.0, "mac")
    }
    /// `ips`: requested addresses (`<ip>[/<prefix>]`).
    pub fn ips(&self) -> Option<Result<Vec<String>, Error>> {
        typed("runtimeConfig", &self.0, "ips")
    }
    /// Any other capability, typed by the caller.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<Result<T, Error>> {
        typed("runtimeConfig", &self.0, key)
    }
}

impl Args {
    fn cni(&self) -> Option<Result<Extra, Error>> {
        typed("args", &self.0, "cni")
    }

    fn cni_key<T: DeserializeOwned>(&self, key: &str) -> Option<Result<T, Error>> {
        match self.cni()? {
            Err(e) => Some(Err(e)),
            Ok(cni) => typed("args.cni", &cni, key),
        }
    }

    /// `args.cni.ips`: "Request static IPs", `"<ip>[/<prefix>]"` each.
    pub fn cni_ips(&self) -> Option<Result<Vec<String>, Error>> {
        self.cni_key("ips")
    }

    /// `args.cni.labels`: `key=value` labels.
    pub fn cni_labels(&self) -> Option<Result<Vec<Label>, Error>> {
        self.cni_key("labels")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(rc.ip_ranges().is_none());
        let e = rc.bandwidth().unwrap().unwrap_err();
        assert_eq!(e.code, Code::INVALID_NETWORK_CONFIG);
        assert!(e.msg.contains("runtimeConfig.bandwidth"));
    }

    #[test]
    fn args_cni_ips_and_labels() {
        let args: Args = serde_json::from_value(serde_json::json!({
            "cni": {"ips": ["10.2.2.42/24", "2001:db8::5"], "labels": [{"key": "app", "value": "web"}]}
        }))
        .unwrap();
        assert_eq!(
            args.cni_ips().unwrap().unwrap(),
            ["10.2.2.42/24", "2001:db8::5"]
        );
        assert_eq!(args.cni_labels().unwrap().unwrap()[0].key, "app");
        assert!(Args::default().cni_ips().is_none());
    }
}
