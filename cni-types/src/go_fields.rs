//! Object keys matched to fields as Go's `encoding/json` matches them.
//!
//! The reference plugins decode `runtimeConfig` and `args` into Go structs,
//! and Go's decoder takes a key that names a field in another case
//! (`"HostPort"` for `hostPort`), and leaves a field alone when its value
//! is `null`. Runtimes rely on it: containerd's CRI sends its capability
//! arguments with Go-style keys (`{"HostPort": 8080, "ContainerPort": 80,
//! "Protocol": "tcp", "HostIP": ""}`) and `"io.kubernetes.cri.pod-annotations":
//! null` beside them. [`from_value`] reads a value into any serde type with
//! the same rules, at every depth, without a list of aliases per field.

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{DeserializeOwned, IntoDeserializer, Visitor};
use serde::{forward_to_deserialize_any, Deserializer};
use serde_json::{Map, Value};

/// Reads `value` as `T` with Go's rules for object keys wherever `T` has a
/// struct: a key matches the field of its exact name, else the first field
/// whose name is equal under simple Unicode case folding (Go:
/// `strings.EqualFold`), else nothing (ignored unless `T` refuses unknown
/// keys); a `null` value leaves its field absent (so `None`, or the
/// default). Outside structs (maps, sequences, scalars) nothing changes.
///
/// Go takes the last of two keys that name the same field; the order of
/// keys is not kept here, so the exact spelling wins, else the first in
/// byte order. Only an object that names a field twice can tell.
pub(crate) fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, serde_json::Error> {
    T::deserialize(GoValue(value))
}

/// The value of the struct field `field` in `map`, found as Go's decoder
/// finds it: the key spelled exactly, else one equal under case folding;
/// a `null` counts as absent. For code that reads a configuration section
/// by hand where the reference decodes it into a Go struct (host-local's
/// `ipam` keys: `"Ranges"` is `ranges`).
///
/// ```
/// let map = serde_json::json!({"DataDir": "/run/ipam", "routes": null});
/// let map = map.as_object().unwrap();
/// assert_eq!(cni_types::go_field(map, "dataDir").unwrap(), "/run/ipam");
/// assert!(cni_types::go_field(map, "routes").is_none());
/// ```
pub fn get<'a>(map: &'a Map<String, Value>, field: &str) -> Option<&'a Value> {
    map.get(field).filter(|v| !v.is_null()).or_else(|| {
        map.iter()
            .find(|(k, v)| !v.is_null() && equal_fold(k, field))
            .map(|(_, v)| v)
    })
}

/// Renames the keys of `map` that spell one of `fields` in another case
/// to that field, as Go's decoder reads them into a struct: the exact
/// spelling when present and not `null`, else the first other spelling
/// that is not `null` (in the map's order: byte order). The other
/// spellings are removed, since Go gives them to the same field (so they
/// reach no one else). Keys naming no field are left alone.
pub(crate) fn fold_keys(map: &mut Map<String, Value>, fields: &[&str]) {
    for field in fields {
        let others: Vec<String> = map
            .keys()
            .filter(|k| k.as_str() != *field && equal_fold(k, field))
            .cloned()
            .collect();
        if others.is_empty() {
            continue;
        }
        let mut chosen = map.get(*field).filter(|v| !v.is_null()).cloned();
        for key in others {
            let value = map.remove(&key);
            if chosen.is_none() {
                chosen = value.filter(|v| !v.is_null());
            }
        }
        if let Some(value) = chosen {
            map.insert((*field).to_string(), value);
        }
    }
}

/// Whether a key of `keys` spells one of `fields` in another case only
/// (so [`fold_keys`] would change something).
pub(crate) fn any_folded<'k>(mut keys: impl Iterator<Item = &'k str>, fields: &[&str]) -> bool {
    keys.any(|k| !fields.contains(&k) && fields.iter().any(|f| equal_fold(k, f)))
}

/// Whether `a` and `b` are equal under simple case folding, as Go's
/// `strings.EqualFold` (so `K`, the Kelvin sign, matches `k`, and `ſ` `s`).
fn equal_fold(a: &str, b: &str) -> bool {
    let fold = |c: char| c.to_lowercase().flat_map(char::to_uppercase);
    a.chars().count() == b.chars().count()
        && a.chars()
            .zip(b.chars())
            .all(|(x, y)| x == y || fold(x).eq(fold(y)))
}

/// The entries of `map` renamed to the struct's `fields` as Go matches
/// them, null values dropped.
fn struct_entries<'a>(
    map: &'a Map<String, Value>,
    fields: &'static [&'static str],
) -> Vec<(&'a str, GoValue<'a>)> {
    let mut entries: Vec<(&'a str, GoValue<'a>)> = Vec::with_capacity(map.len());
    // Exact names first, so a folded spelling never replaces one.
    for (key, value) in map.iter().filter(|(_, v)| !v.is_null()) {
        if fields.contains(&key.as_str()) {
            entries.push((key, GoValue(value)));
        }
    }
    for (key, value) in map.iter().filter(|(_, v)| !v.is_null()) {
        if fields.contains(&key.as_str()) {
            continue;
        }
        match fields.iter().find(|f| equal_fold(key, f)) {
            Some(field) if entries.iter().any(|(k, _)| k == field) => {}
            Some(field) => entries.push((field, GoValue(value))),
            None => entries.push((key, GoValue(value))),
        }
    }
    entries
}

/// Each `deserialize_*` method named, forwarded to serde_json's reader of
/// the value.
macro_rules! forward_to_value {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.0.$method(visitor)
            }
        )*
    };
}

/// A JSON value read with Go's rules for struct keys.
#[derive(Clone, Copy)]
struct GoValue<'a>(&'a Value);

impl<'de> IntoDeserializer<'de, serde_json::Error> for GoValue<'de> {
    type Deserializer = GoValue<'de>;

    fn into_deserializer(self) -> GoValue<'de> {
        self
    }
}

impl<'de> Deserializer<'de> for GoValue<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => {
                let mut seq = SeqDeserializer::new(items.iter().map(GoValue));
                let value = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(value)
            }
            Value::Object(map) => {
                let mut entries =
                    MapDeserializer::new(map.iter().map(|(k, v)| (k.as_str(), GoValue(v))));
                let value = visitor.visit_map(&mut entries)?;
                entries.end()?;
                Ok(value)
            }
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut entries = MapDeserializer::new(struct_entries(map, fields).into_iter());
                let value = visitor.visit_map(&mut entries)?;
                entries.end()?;
                Ok(value)
            }
            other => other.deserialize_struct(name, fields, visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    // Scalars as serde_json reads them (numbers as written, with
    // `arbitrary_precision`); sequences and maps through `deserialize_any`,
    // so the structs inside them are read with the same rules.
    forward_to_value! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, visitor)
    }

    forward_to_deserialize_any! {
        seq tuple tuple_struct map
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    struct Port {
        #[serde(rename = "hostPort")]
        host_port: u16,
        #[serde(default)]
        protocol: String,
        #[serde(rename = "hostIP", default)]
        host_ip: Option<String>,
    }

    #[test]
    fn keys_in_another_case_name_the_field_as_in_go() {
        let ports: Vec<Port> =
            from_value(&json!([{"HostPort": 8080, "PROTOCOL": "tcp", "HostIP": ""}])).unwrap();
        assert_eq!(
            ports,
            vec![Port {
                host_port: 8080,
                protocol: "tcp".into(),
                host_ip: Some(String::new())
            }]
        );
    }

    #[test]
    fn the_exact_spelling_wins_over_another_case() {
        let port: Port = from_value(&json!({"HostPort": 1, "hostPort": 2})).unwrap();
        assert_eq!(port.host_port, 2);
    }

    #[test]
    fn a_null_value_leaves_its_field_absent() {
        #[derive(Debug, Deserialize)]
        struct WithMap {
            #[serde(default)]
            annotations: std::collections::BTreeMap<String, String>,
        }
        let read: WithMap = from_value(&json!({"annotations": null})).unwrap();
        assert!(read.annotations.is_empty());
        let port: Port = from_value(&json!({"hostPort": 1, "protocol": null})).unwrap();
        assert_eq!(port.protocol, "");
    }

    #[test]
    fn folding_is_unicode_simple_folding_as_go_equal_fold() {
        assert!(equal_fold("hostPort", "HOSTPORT"));
        assert!(equal_fold("k", "\u{212A}")); // the Kelvin sign
        assert!(equal_fold("s", "\u{17F}")); // long s
        assert!(!equal_fold("hostPort", "host_port"));
        assert!(!equal_fold("ab", "abc"));
    }

    #[test]
    fn maps_keep_their_keys_and_numbers_as_written() {
        let map: std::collections::BTreeMap<String, Value> =
            from_value(&json!({"Rate": 18446744073709551616u128})).unwrap();
        assert_eq!(map["Rate"].to_string(), "18446744073709551616");
    }
}
