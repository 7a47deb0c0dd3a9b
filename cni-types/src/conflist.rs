//! Network configuration lists (the `.conflist` format).

use serde::{Deserialize, Deserializer, Serialize};

use crate::Extra;

/// A network configuration list: "a list of CNI plugins to be invoked in
/// order" (spec, section 1). Plugin entries stay raw: the runtime injects
/// `name`, `cniVersion`, `runtimeConfig` and `prevResult` into each before
/// a plugin reads it.
///
/// Go: `types.NetConfList`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetConfList {
    /// "`cniVersion` (string): Semantic Version 2.0 of CNI specification to
    /// which this configuration list and all the individual configurations
    /// conform."
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub cni_version: String,
    /// 1.1.0: "`cniVersions` (string list): List of all CNI versions which
    /// this configuration supports."
    #[serde(rename = "cniVersions", default, skip_serializing_if = "Vec::is_empty")]
    pub cni_versions: Vec<String>,
    /// "`name` (string): Network name. This should be unique across all
    /// network configurations on a host."
    #[serde(default)]
    pub name: String,
    /// "`disableCheck` (boolean): Either `true` or `false`. If
    /// `disableCheck` is `true`, runtimes must not call `CHECK`."
    #[serde(
        rename = "disableCheck",
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "bool_or_string"
    )]
    pub disable_check: bool,
    /// 1.1.0: "`disableGC` (boolean): If `disableGC` is true, runtimes must
    /// not call `GC`."
    #[serde(
        rename = "disableGC",
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "bool_or_string"
    )]
    pub disable_gc: bool,
    /// 1.1.0: "`loadOnlyInlinedPlugins` (boolean)" (runtime concern).
    #[serde(
        rename = "loadOnlyInlinedPlugins",
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "bool_or_string"
    )]
    pub load_only_inlined_plugins: bool,
    /// "`plugins` (list): A list of CNI plugins and their configuration."
    #[serde(default)]
    pub plugins: Vec<Extra>,
    /// Any other top-level key, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A boolean, or the strings `"true"`/`"false"` (any case), as the
/// reference runtime library reads these flags.
fn bool_or_string<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum B {
        Bool(bool),
        Str(String),
    }
    match B::deserialize(d)? {
        B::Bool(b) => Ok(b),
        B::Str(s) => s
            .to_ascii_lowercase()
            .parse()
            .map_err(|_| serde::de::Error::custom(format_args!("expected a boolean, got {s:?}"))),
    }
}
