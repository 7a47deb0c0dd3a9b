//! What can be wrong in a configuration, kept with its cause, and the CNI
//! code each answers with at the crate's boundary.

use cni_types::{CniArgsError, Error};
use serde_json::Value;

/// A configuration this crate refuses: the `ipam` section, the requested
/// addresses, a store's keys.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The configuration has no `ipam` section.
    #[error("invalid ipam")]
    NoIpam,
    /// A field's value is wrong.
    #[error("invalid {field}")]
    Invalid {
        /// Its path: `ipam.ranges[0][1].rangeStart`.
        field: String,
        /// The value as written (text quoted, JSON as is).
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// A route that is not `{dst, gw}`.
    #[error("invalid {field}")]
    Route {
        /// Its path: `ipam.routes[2]`.
        field: String,
        /// The value as written.
        value: String,
        /// Why it is no route.
        #[source]
        source: serde_json::Error,
    },
    /// `CNI_ARGS` is malformed.
    #[error(transparent)]
    CniArgs(#[from] CniArgsError),
    /// `CNI_ARGS` `IP` is no address.
    #[error("invalid CNI_ARGS IP")]
    CniArgsIp {
        /// The value given.
        text: String,
    },
}

impl ConfigError {
    /// `field` has the wrong `value`, because `why`.
    pub(crate) fn invalid(field: &str, value: impl ShowValue, why: &str) -> ConfigError {
        ConfigError::Invalid {
            field: field.to_owned(),
            value: value.show(),
            why: why.to_owned(),
        }
    }
}

impl From<ConfigError> for Error {
    /// Code 7 naming the field, with the value and the reason in `details`;
    /// code 4 for `CNI_ARGS`, as everywhere.
    fn from(err: ConfigError) -> Error {
        match err {
            ConfigError::NoIpam => {
                Error::invalid_config("ipam", "the configuration has no ipam section")
            }
            ConfigError::Invalid { field, value, why } => {
                Error::invalid_config(&field, format!("{value}: {why}"))
            }
            ConfigError::Route {
                field,
                value,
                source,
            } => Error::invalid_config(&field, format!("{value}: {source}")),
            ConfigError::CniArgs(e) => Error::from(e),
            ConfigError::CniArgsIp { text } => Error::invalid_env(
                "CNI_ARGS IP",
                format!("{text:?}: not an IP address with an optional /prefix"),
            ),
        }
    }
}

/// How a value is quoted in a message: text as a JSON string, JSON as is.
pub(crate) trait ShowValue {
    fn show(&self) -> String;
}

impl ShowValue for &str {
    fn show(&self) -> String {
        format!("{self:?}")
    }
}

impl ShowValue for &String {
    fn show(&self) -> String {
        format!("{self:?}")
    }
}

impl ShowValue for &Value {
    fn show(&self) -> String {
        self.to_string()
    }
}
