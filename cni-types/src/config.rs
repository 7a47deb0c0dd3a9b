//! Plugin configuration: what a plugin reads on stdin.
//!
//! [`NetConf`] and its accessors here; reading one from stdin's bytes or a
//! JSON value in `parse`; the `ipam` section in `ipam`. The conventions
//! (`args`, `runtimeConfig`) are in [`crate::conventions`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::conventions::{Args, RuntimeConfig};
use crate::result::Wire;
use crate::{CniResult, Dns, ValidAttachments};

mod ipam;
mod parse;

pub use ipam::Ipam;
pub use parse::ConfigError;

/// Fields a plugin does not declare, as serde_json values: kept, so a
/// configuration round-trips with the same values. Numbers print as
/// serde_json prints them (`1e400` as `1e+400`); under
/// `#[serde(flatten)]` in your own struct, prefer
/// [`UnknownFields`](crate::UnknownFields), which keeps their text.
pub type Extra = Map<String, Value>;

/// A plugin configuration, "the configuration ... for a single plugin"
/// (spec, section 1), generic over the plugin's own fields.
///
/// `T` receives every key not listed here: use a struct of your fields,
/// and give it a `#[serde(flatten)] unknown: UnknownFields` field if
/// unknown keys should survive a round trip
/// ([`UnknownFields`](crate::UnknownFields) keeps each one's text, so every
/// number prints back exactly as written, whatever its size). The default,
/// [`Extra`], keeps them all as untyped values.
///
/// Read it with [`NetConf::from_json`] or [`NetConf::from_value`] (the
/// SDK's entry point uses the first): they read your fields from their
/// text. Deserializing a `NetConf` with serde_json's own functions goes
/// through serde's flatten buffer instead: `serde_json::from_value` then
/// rejects integers beyond 64 bits (`invalid type: integer ... as u128`),
/// and `serde_json::from_str` prints `1e400` back as `1e+400`.
///
/// ```
/// use cni_types::NetConf;
///
/// #[derive(serde::Deserialize, serde::Serialize)]
/// struct Mine { mtu: Option<u32> }
///
/// let conf: NetConf<Mine> = NetConf::from_json(br#"{
///     "cniVersion": "1.0.0", "name": "net", "type": "mine", "mtu": 1400,
///     "prevResult": {"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.0.0.2/24"}]}
/// }"#).unwrap();
/// assert_eq!(conf.plugin.mtu, Some(1400));
/// // prevResult is read in its own version and offered in the configuration's.
/// assert_eq!(conf.prev_result.unwrap().version().to_string(), "1.0.0");
/// ```
///
/// Go: `types.NetConf` (and `types.PluginConf`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetConf<T = Extra> {
    /// "`cniVersion` (string): Semantic Version 2.0 of CNI specification to
    /// which this configuration list and all the individual configurations
    /// conform." Kept verbatim: versions match by exact string. Empty means
    /// 0.1.0.
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub cni_version: String,
    /// "`name` (string): Network name."
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// "`type` (string): Matches the name of the CNI plugin binary on disk."
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub plugin_type: String,
    /// "`capabilities` (dictionary): ... Capabilities supported by this
    /// plugin" (the runtime removes it and fills `runtimeConfig`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<BTreeMap<String, bool>>,
    /// "`ipam` (dictionary): Dictionary with IPAM specific values."
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipam: Option<Ipam>,
    /// "`dns` (dictionary): Dictionary with DNS specific values."
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    /// `args`: optional runtime data, conventions under `cni`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Args>,
    /// `runtimeConfig`: capability values the runtime filled in.
    #[serde(
        rename = "runtimeConfig",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub runtime_config: Option<RuntimeConfig>,
    /// `prevResult`: the previous plugin's result, in this configuration's
    /// version (see [`NetConf::from_json`]).
    #[serde(
        rename = "prevResult",
        skip_deserializing,
        skip_serializing_if = "Option::is_none"
    )]
    pub prev_result: Option<CniResult>,
    /// `prevResult` as read with the rest (the bytes path only), until the
    /// configuration's version is known.
    #[serde(rename = "prevResult", default, skip_serializing)]
    prev_wire: Option<Wire>,
    /// GC: "`cni.dev/valid-attachments` (array of objects): List of
    /// attachments that are still valid" (1.1.0). Also read from the older
    /// name `cni.dev/attachments`, which the reference runtime sends too,
    /// when `cni.dev/valid-attachments` is absent. `null` is the empty list
    /// (libcni's marshalling of an empty list): release everything. Both
    /// keys absent is [`ValidAttachments::Unspecified`]: release nothing
    /// (see [`ValidAttachments`] for the reading). A plugin's
    /// `gc` reads the same value with `cni_skel::Request::valid_attachments`,
    /// whatever its configuration type; this field is for code that holds
    /// a `NetConf`.
    #[serde(
        rename = "cni.dev/valid-attachments",
        default,
        skip_serializing_if = "ValidAttachments::is_unspecified"
    )]
    pub valid_attachments: ValidAttachments,
    #[serde(rename = "cni.dev/attachments", default, skip_serializing)]
    legacy_attachments: ValidAttachments,
    /// The plugin's own fields.
    #[serde(flatten)]
    pub plugin: T,
}

impl<T> NetConf<T> {
    /// The same configuration with other plugin fields.
    pub fn with_plugin<U>(self, plugin: U) -> NetConf<U> {
        NetConf {
            cni_version: self.cni_version,
            name: self.name,
            plugin_type: self.plugin_type,
            capabilities: self.capabilities,
            ipam: self.ipam,
            dns: self.dns,
            args: self.args,
            runtime_config: self.runtime_config,
            prev_result: self.prev_result,
            prev_wire: self.prev_wire,
            valid_attachments: self.valid_attachments,
            legacy_attachments: self.legacy_attachments,
            plugin,
        }
    }

    /// The configuration's version, with 0.1.0 for an empty one.
    pub fn version(&self) -> &str {
        if self.cni_version.is_empty() {
            "0.1.0"
        } else {
            &self.cni_version
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn gc_attachments_are_read_under_either_name() {
        for key in ["cni.dev/valid-attachments", "cni.dev/attachments"] {
            let conf: NetConf = NetConf::from_value(json!({
                "cniVersion": "1.1.0", "name": "n", key: [{"containerID": "c1", "ifname": "eth0"}]
            }))
            .unwrap();
            assert!(conf.valid_attachments.keeps("c1", "eth0"), "{key}");
            assert!(!conf.valid_attachments.keeps("c2", "eth0"), "{key}");
        }
        let both: NetConf = NetConf::from_value(json!({
            "cniVersion": "1.1.0", "name": "n",
            "cni.dev/valid-attachments": [{"containerID": "new", "ifname": "eth0"}],
            "cni.dev/attachments": [{"containerID": "old", "ifname": "eth0"}]
        }))
        .unwrap();
        assert!(both.valid_attachments.keeps("new", "eth0"));
        assert!(!both.valid_attachments.keeps("old", "eth0"));
    }

    #[test]
    fn gc_attachments_absent_are_unspecified_and_null_or_empty_are_the_empty_list() {
        for (extra, want) in [
            (json!({}), ValidAttachments::Unspecified),
            (
                json!({"cni.dev/valid-attachments": null}),
                ValidAttachments::List(vec![]),
            ),
            (
                json!({"cni.dev/attachments": null}),
                ValidAttachments::List(vec![]),
            ),
            (
                json!({"cni.dev/valid-attachments": null, "cni.dev/attachments": null}),
                ValidAttachments::List(vec![]),
            ),
            (
                json!({"cni.dev/valid-attachments": []}),
                ValidAttachments::List(vec![]),
            ),
            (
                json!({"cni.dev/attachments": []}),
                ValidAttachments::List(vec![]),
            ),
        ] {
            let mut conf = json!({"cniVersion": "1.1.0", "name": "n"});
            conf.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let bytes = serde_json::to_vec(&conf).unwrap();
            let from_bytes: NetConf = NetConf::from_json(&bytes).unwrap();
            let from_value: NetConf = NetConf::from_value(conf.clone()).unwrap();
            assert_eq!(from_bytes.valid_attachments, want, "{conf}");
            assert_eq!(from_value.valid_attachments, want, "{conf}");
        }
    }
}
