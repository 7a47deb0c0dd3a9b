//! The keys of a configuration that a plugin's struct does not name, kept
//! as their JSON text.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::raw_de::{NUMBER_TOKEN, RAW_TOKEN};

/// The keys a plugin's configuration struct does not name, each with its
/// JSON text exactly as it came: give your struct a
/// `#[serde(flatten)] unknown: UnknownFields` field and a configuration
/// read by [`NetConf::from_json`](crate::NetConf::from_json) prints back
/// with every number as written, whatever its size (`2^64+1`, `1e400`,
/// nested ones too). Keys keep their order; a repeated key keeps its last
/// value, as Go reads it.
///
/// Prefer it to [`Extra`](crate::Extra) (a `serde_json` map) under
/// `flatten`: `Extra` keeps every value but prints numbers as serde_json
/// does (`1e400` becomes `1e+400`, the same number). Strings are kept as
/// their value (an escape such as `\u00e9` may print as `é`).
///
/// ```
/// use cni_types::{NetConf, UnknownFields};
///
/// #[derive(serde::Deserialize, serde::Serialize)]
/// struct Tuning {
///     mtu: Option<u32>,
///     #[serde(flatten)]
///     unknown: UnknownFields,
/// }
///
/// let input = r#"{"cniVersion":"1.0.0","name":"n","type":"tuning","mtu":1400,"vendor":{"big":18446744073709551617,"tiny":1e400}}"#;
/// let conf: NetConf<Tuning> = NetConf::from_json(input.as_bytes()).unwrap();
/// assert_eq!(conf.plugin.unknown.get("vendor").unwrap().get(), r#"{"big":18446744073709551617,"tiny":1e400}"#);
/// assert_eq!(serde_json::to_string(&conf).unwrap(), input);
/// ```
#[derive(Clone, Default)]
pub struct UnknownFields {
    fields: Vec<(String, Box<RawValue>)>,
}

impl UnknownFields {
    /// No fields.
    pub fn new() -> UnknownFields {
        UnknownFields::default()
    }

    /// The JSON text of `key`, if present.
    ///
    /// ```
    /// let f: cni_types::UnknownFields = serde_json::from_str(r#"{"a":1e400}"#).unwrap();
    /// assert_eq!(f.get("a").unwrap().get(), "1e400");
    /// ```
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Sets `key` (in place when present, else last) and returns the value
    /// it replaces.
    ///
    /// ```
    /// use serde_json::value::RawValue;
    ///
    /// let mut f = cni_types::UnknownFields::new();
    /// f.insert("a", RawValue::from_string("1e400".into()).unwrap());
    /// assert_eq!(serde_json::to_string(&f).unwrap(), r#"{"a":1e400}"#);
    /// ```
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: Box<RawValue>,
    ) -> Option<Box<RawValue>> {
        let key = key.into();
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some((_, old)) => Some(std::mem::replace(old, value)),
            None => {
                self.fields.push((key, value));
                None
            }
        }
    }

    /// Removes `key` and returns its value.
    pub fn remove(&mut self, key: &str) -> Option<Box<RawValue>> {
        let at = self.fields.iter().position(|(k, _)| k == key)?;
        Some(self.fields.remove(at).1)
    }

    /// The fields in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &RawValue)> {
        self.fields.iter().map(|(k, v)| (k.as_str(), v.as_ref()))
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

impl fmt::Debug for UnknownFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.fields.iter().map(|(k, v)| (k, v.get())))
            .finish()
    }
}

impl PartialEq for UnknownFields {
    /// Same keys in the same order with the same text.
    fn eq(&self, other: &UnknownFields) -> bool {
        self.fields.len() == other.fields.len()
            && self
                .iter()
                .zip(other.iter())
                .all(|((ka, a), (kb, b))| ka == kb && a.get() == b.get())
    }
}

impl Serialize for UnknownFields {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.fields.len()))?;
        for (k, v) in &self.fields {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for UnknownFields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = UnknownFields;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UnknownFields, A::Error> {
                let mut fields = UnknownFields::new();
                while let Some(key) = map.next_key::<String>()? {
                    let JsonText(text) = map.next_value()?;
                    let value = RawValue::from_string(text).map_err(de::Error::custom)?;
                    fields.remove(&key);
                    fields.fields.push((key, value));
                }
                Ok(fields)
            }
        }
        d.deserialize_map(Fields)
    }
}

/// One value as JSON text, from whatever a deserializer offers: the text
/// itself where it can (serde_json and the SDK's configuration reader), else
/// rebuilt from what it visits (serde's buffer under `flatten`), with the
/// exact text of numbers that serde_json marks as such.
struct JsonText(String);

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_newtype_struct(RAW_TOKEN, TextVisitor)
            .map(JsonText)
    }
}

struct TextVisitor;

impl<'de> DeserializeSeed<'de> for TextVisitor {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

fn quoted<E: de::Error>(s: &str) -> Result<String, E> {
    serde_json::to_string(s).map_err(E::custom)
}

impl<'de> Visitor<'de> for TextVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<String, E> {
        Ok(b.to_string())
    }
    fn visit_i64<E>(self, n: i64) -> Result<String, E> {
        Ok(n.to_string())
    }
    fn visit_u64<E>(self, n: u64) -> Result<String, E> {
        Ok(n.to_string())
    }
    fn visit_i128<E>(self, n: i128) -> Result<String, E> {
        Ok(n.to_string())
    }
    fn visit_u128<E>(self, n: u128) -> Result<String, E> {
        Ok(n.to_string())
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<String, E> {
        serde_json::to_string(&n).map_err(E::custom)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        quoted(s)
    }
    fn visit_unit<E>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }
    fn visit_none<E>(self) -> Result<String, E> {
        Ok("null".to_owned())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<String, A::Error> {
        let mut out = String::from("[");
        while let Some(item) = seq.next_element_seed(TextVisitor)? {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&item);
        }
        out.push(']');
        Ok(out)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Ok("{}".to_owned());
        };
        if first == RAW_TOKEN || first == NUMBER_TOKEN {
            // serde_json's marked text: the value or number as written.
            return map.next_value::<String>();
        }
        let mut out = String::from("{");
        let mut key = Some(first);
        while let Some(k) = key {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&quoted::<A::Error>(&k)?);
            out.push(':');
            out.push_str(&map.next_value_seed(TextVisitor)?);
            key = map.next_key()?;
        }
        out.push('}');
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_directly_every_value_keeps_its_text() {
        let text = r#"{"a":1e400,"b":[18446744073709551617,{"c":-0.0e-7}],"d":"\u00e9","e":null}"#;
        let f: UnknownFields = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&f).unwrap(), text);
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value() {
        let f: UnknownFields = serde_json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(serde_json::to_string(&f).unwrap(), r#"{"b":2,"a":3}"#);
    }
}
