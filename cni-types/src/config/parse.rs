//! Reading a [`NetConf`] from stdin's bytes (a fast path straight from
//! them) or from a JSON value (the slow path, which is the reference for
//! what the fast one returns).

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Extra, NetConf};
use crate::go_fields;
use crate::raw_de::RawObject;
use crate::result::ResultError;
use crate::{CniResult, Code, Error};

/// A configuration that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not JSON, or a field of the wrong type; names the field's path.
    #[error("failed to decode network configuration: {0}")]
    Json(String),
    /// `prevResult` is not a result.
    #[error("could not parse prevResult: {0}")]
    PrevResult(#[from] ResultError),
}

impl From<ConfigError> for Error {
    /// Code 6, "failed to decode content", with the path and the reason.
    fn from(err: ConfigError) -> Error {
        Error::new(Code::DECODING_FAILURE, err.to_string())
    }
}

impl<T: DeserializeOwned> NetConf<T> {
    /// Reads a configuration.
    ///
    /// Errors name the path of the offending field (`ipam.ranges[0]: ...`).
    /// The plugin's type `T` is filled from the keys that are not standard
    /// fields. `prevResult` is read in its own `cniVersion` when it carries
    /// one (else the configuration's) and converted to the configuration's
    /// version. The reference rejects a `prevResult` of another version
    /// family outright; accepting and converting it is a deliberate
    /// improvement.
    pub fn from_json(json: &[u8]) -> Result<NetConf<T>, ConfigError> {
        // Straight from the bytes when nothing is unusual: the standard
        // fields typed as they are read, `prevResult` too (every version's
        // fields, resolved once the configuration's version is known), only
        // the unknown keys as JSON values. Anything else
        // (an error, to report with its path; a repeated key, which Go
        // reads as the last one; see `plain` for the rest) goes through a
        // JSON value, which is the reference for what this returns: the
        // fast path succeeds only where that one gives the same
        // configuration.
        let direct = if plain(json) {
            Self::direct(json).ok()
        } else {
            None
        };
        direct.map(Ok).unwrap_or_else(|| {
            let value: Value =
                serde_json::from_slice(json).map_err(|e| ConfigError::Json(e.to_string()))?;
            Self::from_value(value)
        })
    }

    fn direct(json: &[u8]) -> Result<NetConf<T>, Box<dyn std::error::Error>> {
        let text = std::str::from_utf8(json)?;
        let raw = RawObject::parse(text)?;
        if go_spelled(&raw)? {
            return Err("a standard key in another case: read through a value".into());
        }
        // `()`: the plugin's keys are read below, from their text; serde
        // skips them here rather than building a map to throw away.
        let mut base: NetConf<()> = serde_json::from_str(text)?;
        base.resolve()?;
        // The plugin's keys from their text: numbers reach it as written.
        let plugin = T::deserialize(raw.without(&STANDARD_KEYS))?;
        Ok(base.with_plugin(plugin))
    }

    /// Like [`NetConf::from_json`], from a parsed JSON value.
    pub fn from_value(value: Value) -> Result<NetConf<T>, ConfigError> {
        // Standard fields and the plugin's are read separately rather than
        // through one flattened derive: serde loses the path of an error
        // inside a flattened field, and cannot buffer numbers beyond 64 bits.
        let Value::Object(mut standard) = value else {
            return Err(ConfigError::Json(format!(
                "expected a JSON object, got {value}"
            )));
        };
        fold_standard_keys(&mut standard);
        let plugin: Extra = standard
            .keys()
            .filter(|k| !STANDARD_KEYS.contains(&k.as_str()))
            .cloned()
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|k| standard.remove_entry(&k))
            .collect();
        // prevResult is read once the version is known, from its compact
        // text, as the bytes path reads it (errors included).
        let prev = standard.remove("prevResult").filter(|v| !v.is_null());
        let mut base: NetConf<Extra> =
            serde_path_to_error::deserialize(Value::Object(standard)).map_err(path_error)?;
        base.resolve()?;
        if let Some(prev) = prev {
            let text = serde_json::to_vec(&prev).map_err(|e| ConfigError::Json(e.to_string()))?;
            base.prev_result = Some(CniResult::parse(base.version(), &text)?);
        }
        // Read from its text, as the bytes path reads it (see `raw_de`).
        let text = serde_json::to_string(&plugin).map_err(|e| ConfigError::Json(e.to_string()))?;
        let plugin = RawObject::parse(&text).map_err(|e| ConfigError::Json(e.to_string()))?;
        let plugin: T = serde_path_to_error::deserialize(plugin).map_err(path_error)?;
        Ok(base.with_plugin(plugin))
    }
}

/// The keys [`NetConf`] reads itself; every other key is the plugin's.
const STANDARD_KEYS: [&str; 11] = [
    "cniVersion",
    "name",
    "type",
    "capabilities",
    "ipam",
    "dns",
    "args",
    "runtimeConfig",
    "prevResult",
    "cni.dev/valid-attachments",
    "cni.dev/attachments",
];

/// The keys of `dns` (Go: `types.DNS`).
const DNS_KEYS: [&str; 4] = ["nameservers", "domain", "search", "options"];

/// Go's rule for the standard keys, which the reference decodes into
/// `types.NetConf` with `encoding/json`: a key naming a field in another
/// case (`"CNIVersion"`, `"Type"`, `"IPAM"`) is that field, the exact
/// spelling winning when both are there; the same inside `ipam` (its
/// `type`) and `dns`. See [`crate::go_fields`] for the rule.
fn fold_standard_keys(map: &mut serde_json::Map<String, Value>) {
    go_fields::fold_keys(map, &STANDARD_KEYS);
    if let Some(Value::Object(ipam)) = map.get_mut("ipam") {
        go_fields::fold_keys(ipam, &["type"]);
    }
    if let Some(Value::Object(dns)) = map.get_mut("dns") {
        go_fields::fold_keys(dns, &DNS_KEYS);
    }
}

/// Whether [`fold_standard_keys`] would change the configuration `raw`,
/// so the fast path must leave it to the value path.
fn go_spelled(raw: &RawObject<'_>) -> Result<bool, serde_json::Error> {
    if go_fields::any_folded(raw.keys(), &STANDARD_KEYS) {
        return Ok(true);
    }
    for (section, fields) in [("ipam", &["type"][..]), ("dns", &DNS_KEYS[..])] {
        let Some(text) = raw.get(section) else {
            continue;
        };
        if text.get().starts_with('{')
            && go_fields::any_folded(RawObject::parse(text.get())?.keys(), fields)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

impl<T> NetConf<T> {
    fn resolve(&mut self) -> Result<(), ConfigError> {
        if let Some(wire) = self.prev_wire.take() {
            self.prev_result = Some(CniResult::from_wire_in(self.version(), wire)?);
        }
        if self.valid_attachments.is_unspecified() {
            self.valid_attachments = std::mem::take(&mut self.legacy_attachments);
        }
        Ok(())
    }
}

/// Nesting beyond which a configuration is read through a JSON value.
const PLAIN_DEPTH: usize = 64;

/// Whether reading `json` straight from its bytes cannot differ from
/// reading it through a JSON value. Values the typed fields do not use are
/// skipped by the fast path, and skipping is more lenient than reading: it
/// accepts invalid UTF-8, lone surrogate escapes and any nesting depth,
/// where reading them into a value fails. So the fast path takes only
/// valid UTF-8 without `\uD800`-`\uDFFF` escapes, nested at most
/// [`PLAIN_DEPTH`] deep (the value reader's limit is 128).
fn plain(json: &[u8]) -> bool {
    if std::str::from_utf8(json).is_err() {
        return false;
    }
    let (mut depth, mut i) = (0usize, 0);
    while let Some(&b) = json.get(i) {
        match b {
            b'"' => {
                // To the end of the string, looking only at escapes.
                loop {
                    let rest = json.get(i + 1..).unwrap_or_default();
                    // A plain loop, not memchr: memchr's first call asks
                    // the CPU for its features, a run of CPUID
                    // instructions that a VM traps (about 60 µs, more than
                    // this scan of a few KiB costs).
                    let Some(at) = rest.iter().position(|&b| b == b'"' || b == b'\\') else {
                        return true; // unterminated: the parser will say so
                    };
                    i += 1 + at;
                    if json[i] == b'"' {
                        break;
                    }
                    let surrogate = json.get(i + 1) == Some(&b'u')
                        && matches!(json.get(i + 2), Some(b'd' | b'D'))
                        && matches!(
                            json.get(i + 3),
                            Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
                        );
                    if surrogate {
                        return false;
                    }
                    i += 1; // the escaped character
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > PLAIN_DEPTH {
                    return false;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    true
}

fn path_error<E: std::fmt::Display>(err: serde_path_to_error::Error<E>) -> ConfigError {
    let path = err.path().to_string();
    if path == "." || path.is_empty() {
        ConfigError::Json(err.inner().to_string())
    } else {
        ConfigError::Json(format!("{path}: {}", err.inner()))
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, Serialize)]
    struct Mine {
        mtu: Option<u32>,
        #[serde(flatten)]
        extra: Extra,
    }

    #[test]
    fn unknown_fields_survive_a_round_trip_beside_typed_ones() {
        let input = json!({
            "cniVersion": "1.0.0", "name": "n", "type": "mine", "mtu": 1400,
            "vendor": {"nested": [1, 2]}, "ipam": {"type": "host-local", "subnet": "10.0.0.0/24"}
        });
        let conf: NetConf<Mine> = NetConf::from_value(input.clone()).unwrap();
        assert_eq!(conf.plugin.mtu, Some(1400));
        assert_eq!(conf.ipam.as_ref().unwrap().ipam_type, "host-local");
        assert_eq!(serde_json::to_value(&conf).unwrap(), input);
    }

    #[test]
    fn numbers_of_any_size_round_trip_exactly() {
        let json =
            br#"{"name":"n","big":1e400,"huge":123456789012345678901234567890,"neg":-0.5e-7}"#;
        let conf = NetConf::<Extra>::from_json(json).unwrap();
        let back = serde_json::to_string(&conf).unwrap();
        // Exponents are printed with an explicit sign; the value is the same.
        for n in ["1e+400", "123456789012345678901234567890", "-0.5e-7"] {
            assert!(back.contains(n), "{n} in {back}");
        }
    }

    /// A plugin struct keeping unknown keys as the docs show.
    #[derive(Debug, Deserialize, Serialize)]
    struct Flattened {
        mtu: Option<u32>,
        #[serde(flatten)]
        unknown: crate::UnknownFields,
    }

    /// Big numbers, top-level and nested, as text.
    const BIG: &str = r#"{"cniVersion":"1.0.0","name":"n","type":"t","mtu":1400,"huge":340282366920938463463374607431768211457,"exp":1e400,"neg":-18446744073709551617,"nested":{"deep":[123456789012345678901234567890,-0.5e-7,{"x":1E+400}]},"s":"a\"b"}"#;

    #[test]
    fn flattened_unknown_fields_keep_every_number_byte_for_byte() {
        let conf: NetConf<Flattened> = NetConf::from_json(BIG.as_bytes()).unwrap();
        assert_eq!(conf.plugin.mtu, Some(1400));
        assert_eq!(serde_json::to_string(&conf).unwrap(), BIG);
    }

    #[test]
    fn flattened_unknown_fields_keep_numbers_on_the_value_path_too() {
        // A repeated standard key sends the configuration through a JSON
        // value, which has parsed the numbers once: exponents gain a sign.
        let json = BIG.replace(r#""name":"n""#, r#""name":"x","name":"n""#);
        let conf: NetConf<Flattened> = NetConf::from_json(json.as_bytes()).unwrap();
        assert_eq!(conf.name, "n");
        let back = serde_json::to_string(&conf).unwrap();
        for n in [
            "340282366920938463463374607431768211457",
            "-18446744073709551617",
            "123456789012345678901234567890",
            "1e+400",
        ] {
            assert!(back.contains(n), "{n} in {back}");
        }
    }

    #[test]
    fn flattened_serde_json_maps_take_numbers_beyond_64_bits() {
        #[derive(Deserialize, Serialize)]
        struct WithExtra {
            #[serde(flatten)]
            extra: Extra,
        }
        let conf: NetConf<WithExtra> = NetConf::from_json(BIG.as_bytes()).unwrap();
        let back = serde_json::to_string(&conf).unwrap();
        for n in [
            "340282366920938463463374607431768211457",
            "123456789012345678901234567890",
            "1e+400",
        ] {
            assert!(back.contains(n), "{n} in {back}");
        }
    }

    #[test]
    fn typed_fields_beside_flattened_ones_still_name_their_path() {
        let err = NetConf::<Flattened>::from_json(br#"{"name":"n","mtu":"big","x":1e400}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("mtu"), "{err}");
        assert!(!err.contains("line 1"), "{err}");
    }

    #[test]
    fn prev_result_of_another_family_is_converted_to_the_config_version() {
        let conf: NetConf = NetConf::from_value(json!({
            "cniVersion": "0.4.0", "name": "n",
            "prevResult": {"cniVersion": "1.1.0", "ips": [{"address": "10.0.0.2/24"}], "interfaces": [{"name": "eth0", "mtu": 9000}]}
        }))
        .unwrap();
        let prev = conf.prev_result.unwrap();
        assert_eq!(prev.version(), &cni_version::SpecVersion::V0_4_0);
        let v: Value = serde_json::from_slice(&prev.to_json()).unwrap();
        assert_eq!(v["ips"][0]["version"], "4");
        assert!(v["interfaces"][0].get("mtu").is_none());
    }

    #[test]
    fn prev_result_without_version_is_read_in_the_config_version() {
        let conf: NetConf = NetConf::from_value(json!({
            "cniVersion": "0.2.0", "name": "n", "prevResult": {"ip4": {"ip": "10.0.0.2/24"}}
        }))
        .unwrap();
        assert_eq!(
            conf.prev_result.unwrap().version(),
            &cni_version::SpecVersion::V0_2_0
        );
    }

    #[test]
    fn a_prev_result_that_is_not_a_result_is_named_as_such_on_both_paths() {
        let json = br#"{"cniVersion": "1.0.0", "name": "n",
            "prevResult": {"ips": [{"address": "10.0.0.300/24"}]}}"#;
        let err = NetConf::<Extra>::from_json(json).unwrap_err().to_string();
        assert!(err.starts_with("could not parse prevResult: "), "{err}");
        assert!(err.contains("10.0.0.300/24"), "{err}");
        let value = serde_json::from_slice(json).unwrap();
        let through_value = NetConf::<Extra>::from_value(value).unwrap_err();
        assert_eq!(through_value.to_string(), err);
        let null_prev = NetConf::<Extra>::from_json(br#"{"name": "n", "prevResult": null}"#);
        assert_eq!(null_prev.unwrap().prev_result, None);
    }

    #[test]
    fn decode_errors_name_the_field_path() {
        let err = NetConf::<Mine>::from_json(br#"{"name":"n","mtu":"big"}"#).unwrap_err();
        assert!(err.to_string().contains("mtu"), "{err}");
        let err =
            NetConf::<Extra>::from_json(br#"{"name":"n","dns":{"nameservers":[1]}}"#).unwrap_err();
        assert!(err.to_string().contains("dns.nameservers[0]"), "{err}");
        let err = NetConf::<Extra>::from_json(
            br#"{"name":"n","prevResult":{"ips":[{"address":"10.0.0.1"}]}}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("10.0.0.1"), "{err}");
        assert_eq!(Error::from(err).code, Code::DECODING_FAILURE);
    }

    #[test]
    fn standard_keys_in_another_case_are_read_as_go_reads_them() {
        let json = br#"{"CNIVersion": "1.0.0", "Name": "n", "TYPE": "bridge", "mtu": 1400,
            "IPAM": {"Type": "host-local", "subnet": "10.1.0.0/16"},
            "DNS": {"Nameservers": ["10.1.0.1"], "SEARCH": ["example.com"]},
            "Capabilities": {"portMappings": true},
            "RuntimeConfig": {"portMappings": [{"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp"}]},
            "PrevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.1.0.5/16"}]}}"#;
        let conf = NetConf::<Mine>::from_json(json).unwrap();
        assert_eq!(conf.cni_version, "1.0.0");
        assert_eq!(
            (conf.name.as_str(), conf.plugin_type.as_str()),
            ("n", "bridge")
        );
        let ipam = conf.ipam.as_ref().unwrap();
        assert_eq!(ipam.ipam_type, "host-local");
        assert_eq!(ipam.extra["subnet"], "10.1.0.0/16");
        let dns = conf.dns.as_ref().unwrap();
        assert_eq!(dns.nameservers, ["10.1.0.1"]);
        assert_eq!(dns.search, ["example.com"]);
        assert!(conf.capabilities.as_ref().unwrap()["portMappings"]);
        let ports = conf.runtime_config.as_ref().unwrap().port_mappings();
        assert_eq!(ports.unwrap().unwrap()[0].host_port, 8080);
        assert!(conf.prev_result.is_some());
        // The standard keys reach no plugin as its own.
        assert_eq!(conf.plugin.mtu, Some(1400));
        assert!(conf.plugin.extra.is_empty(), "{:?}", conf.plugin.extra);
    }

    #[test]
    fn the_exact_spelling_of_a_standard_key_wins_and_null_counts_as_absent() {
        for json in [
            &br#"{"Name": "folded", "name": "exact", "Type": "a", "type": null}"#[..],
            br#"{"name": "exact", "NAME": "folded", "type": null, "TYPE": "a"}"#,
        ] {
            let conf = NetConf::<Mine>::from_json(json).unwrap();
            assert_eq!(conf.name, "exact");
            assert_eq!(conf.plugin_type, "a");
            assert!(conf.plugin.extra.is_empty());
        }
    }

    #[test]
    fn a_plugin_key_that_merely_resembles_a_standard_one_stays_the_plugins() {
        let conf =
            NetConf::<Mine>::from_json(br#"{"name": "n", "names": 1, "ipam_type": 2}"#).unwrap();
        assert_eq!(conf.plugin.extra.len(), 2);
    }
}
