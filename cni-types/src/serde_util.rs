//! Small serde adapters matching the reference's JSON decoding.

use serde::{Deserialize, Deserializer};

/// `null` decodes as the default value (as Go leaves a field untouched).
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// An optional unsigned number where 0 means unset, as Go's `omitempty`
/// integers behave: `0` is never printed.
pub(crate) fn nonzero<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    Ok(Option::<u32>::deserialize(d)?.filter(|n| *n != 0))
}

/// An optional address where `""` means unset, as Go's `string` fields
/// read it (containerd sends `"HostIP": ""` for "every address").
pub(crate) fn empty_as_none<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(text) if text.is_empty() => Ok(None),
        Some(text) => text.parse().map(Some).map_err(serde::de::Error::custom),
    }
}
