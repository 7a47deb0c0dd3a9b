//! `CNI_ARGS`: `K=V;K2=V2` pairs from the runtime.

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

use crate::Error;

/// Parsed `CNI_ARGS`: "Extra arguments passed in by the user at invocation
/// time. Alphanumeric key-value pairs separated by semicolons; for example,
/// `FOO=BAR;ABC=123`" (spec). Pairs are kept in order; for a repeated key the
/// last one wins, as in the reference.
///
/// ```
/// use cni_types::CniArgs;
///
/// #[derive(serde::Deserialize)]
/// #[allow(non_snake_case)]
/// struct MyArgs { IP: Option<std::net::IpAddr>, K8S_POD_NAME: Option<String> }
///
/// let args = CniArgs::parse("IgnoreUnknown=1;IP=10.0.0.5;K8S_POD_NAME=web;OTHER=x").unwrap();
/// let mine: MyArgs = args.deserialize().unwrap();
/// assert_eq!(mine.IP, Some("10.0.0.5".parse().unwrap()));
/// assert_eq!(mine.K8S_POD_NAME.as_deref(), Some("web"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    pairs: Vec<(String, String)>,
}

/// `CNI_ARGS` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CniArgsError {
    /// A pair that is not exactly `KEY=VALUE`.
    #[error("ARGS: invalid pair {0:?}")]
    InvalidPair(String),
    /// Keys the plugin does not know, without `IgnoreUnknown=1`.
    #[error("ARGS: unknown args {0:?}")]
    Unknown(Vec<String>),
    /// A value of the wrong form for its field.
    #[error("ARGS: error parsing value of pair {pair:?}: {reason}")]
    BadValue {
        /// The `KEY=VALUE` pair.
        pair: String,
        /// Why the value did not fit.
        reason: String,
    },
}

impl From<CniArgsError> for Error {
    /// Code 4, "invalid necessary environment variables": the message names
    /// `CNI_ARGS` and the details the pair (as the spec asks of code 4).
    /// [`Error::from_boxed`] applies it too, so `?` on a [`CniArgsError`]
    /// in a plugin method gives code 4, not 999.
    fn from(err: CniArgsError) -> Error {
        Error::invalid_env("CNI_ARGS", err)
    }
}

/// The key the reference reserves for "ignore keys I do not know".
pub const IGNORE_UNKNOWN: &str = "IgnoreUnknown";

impl CniArgs {
    /// Parses `K=V;K2=V2`. An empty string has no pairs; every pair must
    /// have exactly one `=` (so an empty item, as from a trailing `;`, is
    /// an error naming it, as in the reference).
    pub fn parse(s: &str) -> Result<CniArgs, CniArgsError> {
        if s.is_empty() {
            return Ok(CniArgs::default());
        }
        let pairs = s
            .split(';')
            .map(|pair| {
                let mut kv = pair.split('=');
                match (kv.next(), kv.next(), kv.next()) {
                    (Some(k), Some(v), None) => Ok((k.to_owned(), v.to_owned())),
                    _ => Err(CniArgsError::InvalidPair(pair.to_owned())),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(CniArgs { pairs })
    }

    /// The value of `key` (the last one when repeated).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Fills a plugin-defined struct from the pairs; field names are the
    /// keys, exactly. Values are strings, read as the field's type (`1`,
    /// `true`, `0`, `false` for booleans, case-insensitively; numbers; IP
    /// addresses; ...). A key the struct does not have is an error unless
    /// `IgnoreUnknown` is `1` or `true` (the reference's rule);
    /// `IgnoreUnknown` itself is never passed to the struct.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T, CniArgsError> {
        let ignore_unknown = match self.get(IGNORE_UNKNOWN) {
            None => false,
            Some(v) => parse_bool(v).ok_or_else(|| CniArgsError::BadValue {
                pair: format!("{IGNORE_UNKNOWN}={v}"),
                reason: format!(
                    "boolean unmarshal error: invalid input {}",
                    v.to_lowercase()
                ),
            })?,
        };
        // The pair being read, for errors raised by a field's own parser
        // after our deserializer has handed it the string.
        let current = std::cell::Cell::new(("", ""));
        let fields = self
            .pairs
            .iter()
            .filter(|(k, _)| k != IGNORE_UNKNOWN)
            .map(|(k, v)| {
                (
                    k.as_str(),
                    ArgValue {
                        key: k,
                        value: v,
                        current: &current,
                    },
                )
            });
        let map = de::value::MapDeserializer::<_, ArgError>::new(fields);
        let mut unknown = Vec::new();
        let value = serde_ignored::deserialize(map, |path| unknown.push(path.to_string()))
            .map_err(|e| {
                let ArgError(pair, reason) = e;
                let pair = if pair.is_empty() {
                    let (k, v) = current.get();
                    format!("{k}={v}")
                } else {
                    pair
                };
                CniArgsError::BadValue { pair, reason }
            })?;
        if !unknown.is_empty() && !ignore_unknown {
            let unknown = unknown
                .iter()
                .filter_map(|k| self.pairs.iter().rev().find(|(key, _)| key == k))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            return Err(CniArgsError::Unknown(unknown));
        }
        Ok(value)
    }
}

/// `1`/`true`/`0`/`false`, case-insensitively.
fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" => Some(true),
        "0" | "false" => Some(false),
        _ => None,
    }
}

/// A deserialization error: the pair and the reason.
#[derive(Debug)]
struct ArgError(String, String);

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

impl std::error::Error for ArgError {}

impl de::Error for ArgError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        ArgError(String::new(), msg.to_string())
    }
}

/// One value, readable as strings, booleans, numbers or anything that
/// parses from a string.
struct ArgValue<'a> {
    key: &'a str,
    value: &'a str,
    current: &'a std::cell::Cell<(&'a str, &'a str)>,
}

impl ArgValue<'_> {
    fn bad(&self, reason: impl std::fmt::Display) -> ArgError {
        ArgError(format!("{}={}", self.key, self.value), reason.to_string())
    }

    fn parsed<T: std::str::FromStr>(&self, what: &str) -> Result<T, ArgError> {
        self.value
            .parse()
            .map_err(|_| self.bad(format_args!("invalid {what}")))
    }
}

impl<'a> IntoDeserializer<'a, ArgError> for ArgValue<'a> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self.current.set((self.key, self.value));
        self
    }
}

macro_rules! parse_number {
    ($($method:ident => $visit:ident : $ty:ty),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
            visitor.$visit(self.parsed::<$ty>(stringify!($ty))?).map_err(|e: ArgError| self.bad(e.1))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for ArgValue<'de> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor
            .visit_borrowed_str(self.value)
            .map_err(|e: ArgError| self.bad(e.1))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        let b = parse_bool(self.value).ok_or_else(|| {
            self.bad(format_args!(
                "boolean unmarshal error: invalid input {}",
                self.value.to_lowercase()
            ))
        })?;
        visitor.visit_bool(b)
    }

    parse_number! {
        deserialize_i8 => visit_i8: i8, deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32, deserialize_i64 => visit_i64: i64,
        deserialize_u8 => visit_u8: u8, deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32, deserialize_u64 => visit_u64: u64,
        deserialize_f32 => visit_f32: f32, deserialize_f64 => visit_f64: f64,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        let key = self.key;
        let value = self.value;
        visitor
            .visit_enum(value.into_deserializer())
            .map_err(|e: de::value::Error| ArgError(format!("{key}={value}"), e.to_string()))
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    #[allow(non_snake_case)]
    struct Args {
        IP: Option<std::net::IpAddr>,
        DEBUG: Option<String>,
        Verbose: Option<bool>,
        Count: Option<u16>,
    }

    #[test]
    fn pairs_parse_in_order_and_last_wins() {
        let a = CniArgs::parse("A=1;B=2;A=3").unwrap();
        assert_eq!(a.get("A"), Some("3"));
        assert_eq!(a.iter().count(), 3);
        assert!(CniArgs::parse("").unwrap().is_empty());
        assert_eq!(CniArgs::parse("A=").unwrap().get("A"), Some(""));
    }

    #[test]
    fn malformed_pairs_are_errors_naming_the_pair() {
        for (s, pair) in [
            ("A", "A"),
            ("A=1;", ""),
            ("A=1=2", "A=1=2"),
            ("A=1;;B=2", ""),
        ] {
            assert_eq!(
                CniArgs::parse(s),
                Err(CniArgsError::InvalidPair(pair.into())),
                "{s}"
            );
        }
    }

    #[test]
    fn typed_args_read_values_as_their_field_types() {
        let a: Args = CniArgs::parse("IP=10.0.0.5;Verbose=TRUE;Count=7")
            .unwrap()
            .deserialize()
            .unwrap();
        assert_eq!(
            a,
            Args {
                IP: Some("10.0.0.5".parse().unwrap()),
                DEBUG: None,
                Verbose: Some(true),
                Count: Some(7)
            }
        );
    }

    #[test]
    fn unknown_keys_are_errors_unless_ignore_unknown() {
        let err = CniArgs::parse("IP=10.0.0.5;FOO=bar")
            .unwrap()
            .deserialize::<Args>()
            .unwrap_err();
        assert_eq!(err, CniArgsError::Unknown(vec!["FOO=bar".into()]));
        for yes in ["1", "true", "True"] {
            let s = format!("IgnoreUnknown={yes};FOO=bar");
            assert!(
                CniArgs::parse(&s).unwrap().deserialize::<Args>().is_ok(),
                "{s}"
            );
        }
        assert!(CniArgs::parse("IgnoreUnknown=0;FOO=bar")
            .unwrap()
            .deserialize::<Args>()
            .is_err());
        assert!(matches!(
            CniArgs::parse("IgnoreUnknown=yes")
                .unwrap()
                .deserialize::<Args>(),
            Err(CniArgsError::BadValue { .. })
        ));
    }

    #[test]
    fn args_errors_are_code_4_naming_the_pair_even_through_a_box() {
        let err = CniArgs::parse("Count=70000")
            .unwrap()
            .deserialize::<Args>()
            .unwrap_err();
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err.clone());
        for cni in [Error::from(err), Error::from_boxed(boxed)] {
            assert_eq!(cni.code, Code::INVALID_ENVIRONMENT_VARIABLES);
            assert_eq!(cni.msg, "invalid CNI_ARGS");
            assert!(cni.details.contains("Count=70000"), "{cni:?}");
        }
    }

    #[test]
    fn bad_values_name_the_pair() {
        let err = CniArgs::parse("IP=not-an-ip")
            .unwrap()
            .deserialize::<Args>()
            .unwrap_err();
        match err {
            CniArgsError::BadValue { pair, .. } => assert_eq!(pair, "IP=not-an-ip"),
            other => panic!("{other:?}"),
        }
        let err = CniArgs::parse("Count=70000")
            .unwrap()
            .deserialize::<Args>()
            .unwrap_err();
        assert!(
            matches!(err, CniArgsError::BadValue { ref pair, .. } if pair == "Count=70000"),
            "{err:?}"
        );
    }
}
