//! The `ipam` section of a network using `dhcp`, and the DHCP options it
//! asks the client to send.
//!
//! ```json
//! {"type": "dhcp", "daemonSocketPath": "/run/cni/dhcp.sock", "priority": 100,
//!  "request": [{"skipDefault": false, "option": "121"}],
//!  "provide": [{"option": "host-name", "fromArg": "K8S_POD_NAME"}]}
//! ```
//!
//! Go: `IPAMConfig`, `prepareOptions` and `parseOptionName` (plugins
//! `plugins/ipam/dhcp/main.go`, `lease.go`, `options.go`).

use std::path::PathBuf;

use serde::Deserialize;

use crate::message::code;
use crate::DhcpError;

/// The daemon's socket when neither the configuration nor the daemon's
/// `-socketpath` says otherwise.
///
/// Go: `defaultSocketPath`.
pub const DEFAULT_SOCKET_PATH: &str = "/run/cni/dhcp.sock";

/// The network configuration as the dhcp plugin reads it: its name (part
/// of the client id) and its `ipam` section.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NetConfig {
    /// The network's `name`.
    #[serde(default)]
    pub name: String,
    /// The `ipam` section.
    #[serde(default)]
    pub ipam: Option<IpamConfig>,
    /// GC's `cni.dev/valid-attachments`: the leases to keep.
    #[serde(rename = "cni.dev/valid-attachments", default)]
    pub valid_attachments: cni_types::ValidAttachments,
}

impl NetConfig {
    /// Reads the configuration; a malformed one is [`DhcpError::Config`].
    pub fn parse(stdin: &[u8]) -> Result<NetConfig, DhcpError> {
        serde_json::from_slice(stdin).map_err(DhcpError::Config)
    }

    /// The daemon's socket: `ipam.daemonSocketPath`, or
    /// [`DEFAULT_SOCKET_PATH`].
    pub fn socket_path(&self) -> PathBuf {
        self.ipam
            .as_ref()
            .and_then(|i| i.daemon_socket_path.clone())
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET_PATH))
    }
}

/// The `ipam` section's own fields.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct IpamConfig {
    /// `daemonSocketPath`: where the daemon listens.
    #[serde(rename = "daemonSocketPath", default)]
    pub daemon_socket_path: Option<PathBuf>,
    /// `provide`: options the client sends with a value.
    #[serde(default)]
    pub provide: Vec<ProvideOption>,
    /// `request`: options the client asks the server for.
    #[serde(default)]
    pub request: Vec<RequestOption>,
    /// `priority`: the metric of every route in the result (0: none).
    #[serde(default)]
    pub priority: u32,
}

/// One `provide` entry: an option sent with a fixed value or one taken
/// from `CNI_ARGS`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ProvideOption {
    /// `option`: a name from [`OPTION_NAMES`] or a number.
    #[serde(default)]
    pub option: String,
    /// `value`: sent as given when not empty.
    #[serde(default)]
    pub value: String,
    /// `fromArg`: the `CNI_ARGS` key whose value is sent.
    #[serde(rename = "fromArg", default)]
    pub from_arg: String,
}

/// One `request` entry: an option asked for in the parameter request
/// list.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RequestOption {
    /// `skipDefault`: do not ask for the default options (routers and
    /// subnet mask).
    #[serde(rename = "skipDefault", default)]
    pub skip_default: bool,
    /// `option`: a name from [`OPTION_NAMES`] or a number; empty is allowed
    /// (an entry that only sets `skipDefault`).
    #[serde(default)]
    pub option: String,
}

/// The option names the configuration may use instead of numbers, as the
/// reference spells them (dhcp-options(5)).
pub const OPTION_NAMES: [(&str, u8); 6] = [
    ("dhcp-client-identifier", code::CLIENT_ID),
    ("subnet-mask", code::SUBNET_MASK),
    ("routers", code::ROUTER),
    ("host-name", 12),
    ("user-class", 77),
    ("vendor-class-identifier", 60),
];

/// Asked for unless an entry sets `skipDefault`.
///
/// Go: `requestOptionsDefault`.
const DEFAULT_REQUESTED: [u8; 2] = [code::ROUTER, code::SUBNET_MASK];

/// The options a lease's messages carry, prepared from the configuration
/// and `CNI_ARGS`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientOptions {
    /// Options sent with a value, in configuration order.
    pub provide: Vec<(u8, Vec<u8>)>,
    /// The parameter request list (option 55).
    pub request: Vec<u8>,
}

/// An option's code from its name or number.
fn parse_option(field: &str, option: &str) -> Result<u8, DhcpError> {
    if let Some((_, c)) = OPTION_NAMES.iter().find(|(n, _)| *n == option) {
        return Ok(*c);
    }
    option.parse::<u8>().map_err(|_| DhcpError::BadOption {
        field: field.to_string(),
        option: option.to_string(),
        why: "neither a known option name nor a number from 0 to 255".into(),
    })
}

impl IpamConfig {
    /// The options to send, with `fromArg` values looked up in `cni_args`
    /// (`K=V;K=V`, as the runtime passed them). A bad option name or a
    /// value over 255 bytes is [`DhcpError::BadOption`] naming it.
    pub fn client_options(&self, cni_args: &str) -> Result<ClientOptions, DhcpError> {
        let args: Vec<(&str, &str)> = cni_args
            .split(';')
            .filter_map(|pair| pair.split_once('='))
            .collect();
        let mut out = ClientOptions::default();
        for (i, p) in self.provide.iter().enumerate() {
            let field = format!("ipam.provide[{i}].option");
            let c = parse_option(&field, &p.option)?;
            let from_arg = args
                .iter()
                .find(|(k, _)| !p.from_arg.is_empty() && *k == p.from_arg)
                .map(|(_, v)| *v);
            for value in [Some(p.value.as_str()).filter(|v| !v.is_empty()), from_arg]
                .into_iter()
                .flatten()
            {
                if value.len() > 255 {
                    return Err(DhcpError::BadOption {
                        field,
                        option: p.option.clone(),
                        why: format!("its value is {} bytes, more than 255", value.len()),
                    });
                }
                out.provide.retain(|(oc, _)| *oc != c);
                out.provide.push((c, value.as_bytes().to_vec()));
            }
        }
        let mut skip_default = false;
        for (i, r) in self.request.iter().enumerate() {
            skip_default |= r.skip_default;
            if r.option.is_empty() {
                continue;
            }
            let c = parse_option(&format!("ipam.request[{i}].option"), &r.option)?;
            if !out.request.contains(&c) {
                out.request.push(c);
            }
        }
        if !skip_default {
            for c in DEFAULT_REQUESTED {
                if !out.request.contains(&c) {
                    out.request.push(c);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipam(json: &str) -> IpamConfig {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn routers_and_subnet_mask_are_requested_unless_skip_default_is_set() {
        let c = ipam(r#"{"request":[{"option":"121"}]}"#)
            .client_options("")
            .unwrap();
        assert_eq!(c.request, vec![121, 3, 1]);
        let c = ipam(r#"{"request":[{"option":"host-name","skipDefault":true}]}"#)
            .client_options("")
            .unwrap();
        assert_eq!(c.request, vec![12]);
    }

    #[test]
    fn provided_options_take_their_value_from_cni_args_when_named() {
        let c = ipam(r#"{"provide":[{"option":"host-name","fromArg":"K8S_POD_NAME"}]}"#)
            .client_options("IgnoreUnknown=1;K8S_POD_NAME=web-0")
            .unwrap();
        assert_eq!(c.provide, vec![(12, b"web-0".to_vec())]);
    }

    #[test]
    fn an_unknown_option_name_is_refused_naming_the_field() {
        let err = ipam(r#"{"request":[{"option":"no-such"}]}"#)
            .client_options("")
            .unwrap_err();
        assert!(err.to_string().contains("ipam.request[0].option"), "{err}");
        assert!(err.to_string().contains("no-such"), "{err}");
    }

    #[test]
    fn the_socket_path_defaults_to_the_references() {
        let conf = NetConfig::parse(br#"{"name":"n","ipam":{"type":"dhcp"}}"#).unwrap();
        assert_eq!(conf.socket_path(), PathBuf::from(DEFAULT_SOCKET_PATH));
    }
}
