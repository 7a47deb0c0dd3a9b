//! Reading a plugin's own fields from their JSON text, so that every number
//! reaches the plugin's struct exactly, `#[serde(flatten)]` included.
//!
//! serde buffers the keys a flattening struct does not name, and its buffer
//! cannot hold an integer beyond 64 bits; serde_json's `Value` offers such
//! numbers as `u128` (which the buffer rejects) and rewrites `1e400` as
//! `1e+400`. This deserializer behaves like serde_json's own except that a
//! number that is not a 64-bit integer is offered the way serde_json offers
//! arbitrary-precision numbers (a one-entry map from its number marker to
//! the text), with the text exactly as written: `Value` reads that back as
//! a number, and [`UnknownFields`](crate::UnknownFields) keeps it byte for
//! byte.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

/// serde_json's marker for a number kept as text (`arbitrary_precision`).
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";
/// serde_json's marker for unparsed JSON text (`raw_value`).
pub(crate) const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// The members of a JSON object as unparsed text, in order. A repeated key
/// keeps its last value, as Go reads it.
pub(crate) struct RawObject<'a> {
    entries: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> RawObject<'a> {
    /// The members of the object `json`.
    pub(crate) fn parse(json: &'a str) -> Result<RawObject<'a>, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The members' keys, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_ref())
    }

    /// The text of the member `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The same object without the members named in `keys`.
    pub(crate) fn without(mut self, keys: &[&str]) -> RawObject<'a> {
        self.entries.retain(|(k, _)| !keys.contains(&k.as_ref()));
        self
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject<'de>, A::Error> {
                let mut entries: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
                while let Some(Key(key)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    entries.retain(|(k, _)| *k != key);
                    entries.push((key, value));
                }
                Ok(RawObject { entries })
            }
        }
        d.deserialize_map(Members)
    }
}

/// An object key, borrowed from the text unless it has escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> Deserializer<'de> for RawObject<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(Members {
            entries: self.entries.into_iter(),
            value: None,
        })
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct enum identifier
    }
}

/// The members of an object, offered one by one.
struct Members<'de> {
    entries: std::vec::IntoIter<(Cow<'de, str>, &'de RawValue)>,
    value: Option<&'de RawValue>,
}

impl<'de> MapAccess<'de> for Members<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        match key {
            Cow::Borrowed(k) => seed.deserialize(de::value::BorrowedStrDeserializer::new(k)),
            Cow::Owned(k) => seed.deserialize(de::value::StringDeserializer::new(k)),
        }
        .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, Self::Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a value asked for before its key"))?;
        seed.deserialize(RawText(value.get()))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// The elements of an array, offered one by one.
struct Elements<'de> {
    items: std::vec::IntoIter<&'de RawValue>,
}

impl<'de> SeqAccess<'de> for Elements<'de> {
    type Error = serde_json::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Self::Error> {
        self.items
            .next()
            .map(|item| seed.deserialize(RawText(item.get())))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// A number that is not a 64-bit integer, offered as serde_json offers one:
/// a map from its marker to its text.
struct NumberText<'de>(Option<&'de str>);

impl<'de> MapAccess<'de> for NumberText<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        if self.0.is_none() {
            return Ok(None);
        }
        seed.deserialize(de::value::BorrowedStrDeserializer::new(NUMBER_TOKEN))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, Self::Error> {
        let text = self
            .0
            .take()
            .ok_or_else(|| de::Error::custom("a number read twice"))?;
        seed.deserialize(de::value::BorrowedStrDeserializer::new(text))
    }
}

/// One JSON value as its text.
struct RawText<'de>(&'de str);

impl<'de> RawText<'de> {
    /// serde_json reading the text, for everything that needs no care.
    fn with_json<T>(
        self,
        read: impl FnOnce(
            &mut serde_json::Deserializer<serde_json::de::StrRead<'de>>,
        ) -> Result<T, serde_json::Error>,
    ) -> Result<T, serde_json::Error> {
        let mut json = serde_json::Deserializer::from_str(self.0);
        let value = read(&mut json).map_err(without_position)?;
        json.end().map_err(without_position)?;
        Ok(value)
    }

    fn first_byte(&self) -> Option<u8> {
        self.0.trim_start().bytes().next()
    }
}

/// The error without serde_json's position, which counts from the start of
/// one value's text here and would mislead; the path says where it is.
fn without_position(err: serde_json::Error) -> serde_json::Error {
    if err.line() == 0 {
        return err;
    }
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    de::Error::custom(text.strip_suffix(&suffix).unwrap_or(&text))
}

macro_rules! through_json {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.with_json(|json| json.$method(visitor))
        }
    )*};
}

impl<'de> Deserializer<'de> for RawText<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.first_byte() {
            Some(b'{') => RawObject::parse(self.0)
                .map_err(without_position)?
                .deserialize_any(visitor),
            Some(b'[') => {
                let items: Vec<&RawValue> =
                    serde_json::from_str(self.0).map_err(without_position)?;
                visitor.visit_seq(Elements {
                    items: items.into_iter(),
                })
            }
            Some(b'-' | b'0'..=b'9') => {
                let text = self.0.trim();
                // As serde_json reads numbers: 64-bit integers as such
                // (JSON integers have one spelling, so none is lost),
                // everything else as text.
                if let Ok(n) = text.parse::<u64>() {
                    visitor.visit_u64(n)
                } else if let Some(n) = text.parse::<i64>().ok().filter(|_| text != "-0") {
                    visitor.visit_i64(n)
                } else {
                    // Valid: its container was read as JSON.
                    visitor.visit_map(NumberText(Some(text)))
                }
            }
            _ => self.with_json(|json| json.deserialize_any(visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        if self.0.trim() == "null" {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if name == RAW_TOKEN {
            // The text itself, for `RawValue` and `UnknownFields`.
            self.with_json(|json| json.deserialize_newtype_struct(name, visitor))
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.first_byte() {
            Some(b'[') => self.deserialize_any(visitor),
            _ => self.with_json(|json| json.deserialize_seq(visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.first_byte() {
            Some(b'{') => self.deserialize_any(visitor),
            _ => self.with_json(|json| json.deserialize_map(visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.with_json(|json| json.deserialize_enum(name, variants, visitor))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.with_json(|json| json.deserialize_unit_struct(name, visitor))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        // The text was checked when its container was read.
        visitor.visit_unit()
    }

    through_json! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_bytes deserialize_byte_buf deserialize_unit
        deserialize_identifier
    }
}
