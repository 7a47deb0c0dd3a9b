//! The well-known capabilities and `args` conventions (CONVENTIONS.md), as
//! typed, optional views over the raw sections.
//!
//! The sections stay raw maps so that a plugin never fails on a convention
//! it does not use; a plugin that does use one asks for it typed and gets an
//! error naming the key when its value is malformed.
//!
//! Keys are matched as the reference plugins' Go structs match them, at
//! every depth: the exact spelling, else the same name in another case
//! (Go's `encoding/json` folds case), and a `null` value is absent. So
//! what containerd's CRI sends reads as the reference reads it:
//!
//! ```
//! use cni_types::conventions::RuntimeConfig;
//!
//! let rc: RuntimeConfig = serde_json::from_str(r#"{
//!     "portMappings": [{"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""}],
//!     "bandwidth": {"IngressRate": 1000000, "IngressBurst": 4294967295},
//!     "io.kubernetes.cri.pod-annotations": null}"#).unwrap();
//! let port = &rc.port_mappings().unwrap().unwrap()[0];
//! assert_eq!((port.host_port, port.container_port, port.host_ip), (8080, 80, None));
//! assert_eq!(rc.bandwidth().unwrap().unwrap().ingress_burst, 4294967295);
//! ```
//!
//! Go takes the last of two keys naming one field; here the exact spelling
//! wins (the key order is not kept). Only an object that names a field
//! twice can tell.

use std::net::IpAddr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Error, Extra, IpNetwork};

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

/// A `labels` entry under `args.cni`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// Label key.
    pub key: String,
    /// Label value.
    pub value: String,
}

/// Reads `map[key]` as `T` the way the reference's Go structs read it
/// ([`crate::go_fields`]: keys in any case, `null` as absent, at every
/// depth): `None` when absent or null, code 7 naming the section, key and
/// reason when malformed.
fn typed<T: DeserializeOwned>(section: &str, map: &Extra, key: &str) -> Result<Option<T>, Error> {
    let Some(value) = crate::go_fields::get(map, key) else {
        return Ok(None);
    };
    crate::go_fields::from_value(value)
        .map(Some)
        .map_err(|e| Error::invalid_config(&format!("{section}.{key}"), e))
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

impl Args {
    fn cni(&self) -> Result<Option<Extra>, Error> {
        typed("args", &self.0, "cni")
    }

    fn cni_key<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, Error> {
        match self.cni()? {
            None => Ok(None),
            Some(cni) => typed("args.cni", &cni, key),
        }
    }

    /// The value of `args.cni.<key>` as given, keys found with Go's rules
    /// (as Go's decoder finds them), for a caller that reads it by hand.
    pub fn cni_value(&self, key: &str) -> Option<&Value> {
        let cni = crate::go_fields::get(&self.0, "cni")?.as_object()?;
        crate::go_fields::get(cni, key)
    }

    /// `args.cni.ips`: "Request static IPs", `"<ip>[/<prefix>]"` each.
    pub fn cni_ips(&self) -> Result<Option<Vec<String>>, Error> {
        self.cni_key("ips")
    }

    /// `args.cni.labels`: `key=value` labels.
    pub fn cni_labels(&self) -> Result<Option<Vec<Label>>, Error> {
        self.cni_key("labels")
    }
}

/// Where a requested MAC address came from; see [`requested_mac`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacSource {
    /// `CNI_ARGS` `MAC=...`: how Podman passes `--mac-address`.
    CniArgs,
    /// `args.cni.mac` in the configuration.
    ArgsCni,
    /// `runtimeConfig.mac`: the `mac` capability (CONVENTIONS.md).
    RuntimeConfig,
    /// The plugin's own `mac` key (tuning has one).
    Config,
}

impl std::fmt::Display for MacSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MacSource::CniArgs => "CNI_ARGS MAC",
            MacSource::ArgsCni => "args.cni.mac",
            MacSource::RuntimeConfig => "runtimeConfig.mac",
            MacSource::Config => "mac",
        })
    }
}

/// Which reference plugin's precedence [`requested_mac`] follows: the
/// reference plugins disagree on `args.cni.mac` against
/// `runtimeConfig.mac`, and a drop-in replacement must pick the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacPrecedence {
    /// Interface plugins (reference `bridge`, `loadNetConf`):
    /// `runtimeConfig.mac`, then `args.cni.mac`, then `CNI_ARGS` `MAC`,
    /// then the plugin's own `mac`.
    Interface,
    /// The reference `tuning` (`parseConf`): `args.cni.mac`, then
    /// `runtimeConfig.mac`, then `CNI_ARGS` `MAC`, then the plugin's own
    /// `mac`.
    Tuning,
}

impl MacPrecedence {
    /// The sources, the one that wins first.
    pub fn order(self) -> [MacSource; 4] {
        use MacSource::*;
        match self {
            MacPrecedence::Interface => [RuntimeConfig, ArgsCni, CniArgs, Config],
            MacPrecedence::Tuning => [ArgsCni, RuntimeConfig, CniArgs, Config],
        }
    }
}

/// The MAC address asked for the interface, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestedMac {
    /// The address.
    pub mac: crate::Mac,
    /// The source that won.
    pub source: MacSource,
}

/// The MAC address requested for `CNI_IFNAME`, from every place a runtime
/// or a user can put one, in the reference plugins' order of precedence;
/// `None` when none asks for one. An empty value counts as absent, as in
/// the reference.
///
/// `cni_args` is `CNI_ARGS` as given (malformed: code 4); `own` is the
/// plugin's own `mac` key, if it has one.
///
/// ```
/// use cni_types::conventions::{requested_mac, MacPrecedence, MacSource};
/// use cni_types::NetConf;
///
/// let conf: NetConf = NetConf::from_json(br#"{"cniVersion": "1.0.0", "name": "n",
///     "runtimeConfig": {"mac": "02:00:00:00:00:02"}}"#).unwrap();
/// let podman = "IgnoreUnknown=1;K8S_POD_NAME=web;MAC=02:00:00:00:00:01";
/// let got = requested_mac(&conf, podman, None, MacPrecedence::Interface).unwrap().unwrap();
/// assert_eq!((got.mac.to_string().as_str(), got.source),
///            ("02:00:00:00:00:02", MacSource::RuntimeConfig));
/// ```
///
/// Go: the `MacEnvArgs` handling in the reference `bridge` (`loadNetConf`)
/// and `tuning` (`parseConf`). Where we deliberately differ: every value
/// given is checked, not only the winner, so a typo fails now rather than
/// the day precedence changes (code 7 naming the source and the value, also
/// for a group address, which no interface can take); and other `CNI_ARGS`
/// keys are left to the plugins they are for, where the reference fails
/// on them unless `IgnoreUnknown=1`.
pub fn requested_mac<T>(
    conf: &crate::NetConf<T>,
    cni_args: &str,
    own: Option<&str>,
    precedence: MacPrecedence,
) -> Result<Option<RequestedMac>, Error> {
    let env = crate::CniArgs::parse(cni_args)?;
    let text = |source| -> Result<Option<String>, Error> {
        let given = match source {
            MacSource::CniArgs => env.get("MAC").map(str::to_owned),
            MacSource::ArgsCni => conf
                .args
                .as_ref()
                .map(|a| a.cni_key("mac"))
                .transpose()?
                .flatten(),
            MacSource::RuntimeConfig => conf
                .runtime_config
                .as_ref()
                .map(RuntimeConfig::mac)
                .transpose()?
                .flatten(),
            MacSource::Config => own.map(str::to_owned),
        };
        Ok(given.filter(|t| !t.is_empty()))
    };
    let mut winner = None;
    for source in precedence.order() {
        let Some(text) = text(source)? else { continue };
        let mac = text
            .parse::<crate::Mac>()
            .ok()
            .filter(|m| m.is_unicast())
            .ok_or_else(|| {
                Error::invalid_config(
                    &format!("MAC address in {source}"),
                    format!("{text:?}: not a unicast MAC address"),
                )
            })?;
        winner.get_or_insert(RequestedMac { mac, source });
    }
    Ok(winner)
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
        assert!(Args::default().cni_ips().unwrap().is_none());
    }

    fn conf(json: serde_json::Value) -> crate::NetConf {
        crate::NetConf::from_value(json).unwrap()
    }

    #[test]
    fn each_reference_plugin_order_of_mac_precedence_is_kept() {
        let all = conf(serde_json::json!({
            "cniVersion": "1.0.0", "name": "n",
            "args": {"cni": {"mac": "02:00:00:00:00:02"}},
            "runtimeConfig": {"mac": "02:00:00:00:00:03"}
        }));
        let env = "IgnoreUnknown=1;MAC=02:00:00:00:00:01";
        let own = Some("02:00:00:00:00:04");
        let won = |conf: &crate::NetConf, env, own, p| {
            let got: RequestedMac = requested_mac(conf, env, own, p).unwrap().unwrap();
            (got.mac.to_string(), got.source)
        };
        let mac = |n: u8| format!("02:00:00:00:00:0{n}");
        use MacPrecedence::*;
        assert_eq!(
            won(&all, env, own, Interface),
            (mac(3), MacSource::RuntimeConfig)
        );
        assert_eq!(won(&all, env, own, Tuning), (mac(2), MacSource::ArgsCni));
        let plain = conf(serde_json::json!({"cniVersion": "1.0.0", "name": "n"}));
        assert_eq!(won(&plain, env, own, Tuning), (mac(1), MacSource::CniArgs));
        assert_eq!(
            won(&plain, "MAC=", own, Interface),
            (mac(4), MacSource::Config)
        );
        assert_eq!(requested_mac(&plain, "", None, Tuning).unwrap(), None);
    }

    #[test]
    fn an_invalid_mac_anywhere_is_code_7_naming_source_and_value() {
        let c = conf(serde_json::json!({
            "cniVersion": "1.0.0", "name": "n", "runtimeConfig": {"mac": "02:00:00:00:00:03"}
        }));
        let err =
            requested_mac(&c, "MAC=02:00:00:zz:00:01", None, MacPrecedence::Interface).unwrap_err();
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
        assert_eq!(err.msg, "invalid MAC address in CNI_ARGS MAC");
        assert!(err.details.contains("02:00:00:zz:00:01"), "{err:?}");
        let err =
            requested_mac(&c, "", Some("01:00:5e:00:00:01"), MacPrecedence::Tuning).unwrap_err();
        assert_eq!(err.msg, "invalid MAC address in mac");
        let err = requested_mac(&c, "MAC", None, MacPrecedence::Tuning).unwrap_err();
        assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES);
    }
}
