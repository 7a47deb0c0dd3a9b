//! The CNI error result and its well-known codes.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A CNI error code. Codes 0-99 are reserved for the well-known errors
/// below; plugins use 100 and above for their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Code(pub u32);

impl Code {
    /// 1: "Incompatible CNI version".
    ///
    /// Go: `types.ErrIncompatibleCNIVersion`.
    pub const INCOMPATIBLE_CNI_VERSION: Code = Code(1);
    /// 2: "Unsupported field in network configuration. The error message must
    /// contain the key and value of the unsupported field."
    ///
    /// Go: `types.ErrUnsupportedField`.
    pub const UNSUPPORTED_FIELD: Code = Code(2);
    /// 3: "Container unknown or does not exist. This error implies the runtime
    /// does not need to perform any container network cleanup."
    ///
    /// Go: `types.ErrUnknownContainer`.
    pub const UNKNOWN_CONTAINER: Code = Code(3);
    /// 4: "Invalid necessary environment variables, like CNI_COMMAND,
    /// CNI_CONTAINERID, etc. The error message must contain the names of
    /// invalid variables."
    ///
    /// Go: `types.ErrInvalidEnvironmentVariables`.
    pub const INVALID_ENVIRONMENT_VARIABLES: Code = Code(4);
    /// 5: "I/O failure. For example, failed to read network config bytes from
    /// stdin."
    ///
    /// Go: `types.ErrIOFailure`.
    pub const IO_FAILURE: Code = Code(5);
    /// 6: "Failed to decode content. For example, failed to unmarshal network
    /// config from bytes or failed to decode version info from string."
    ///
    /// Go: `types.ErrDecodingFailure`.
    pub const DECODING_FAILURE: Code = Code(6);
    /// 7: "Invalid network config. If some validations on network configs do
    /// not pass, this error will be raised."
    ///
    /// Go: `types.ErrInvalidNetworkConfig`.
    pub const INVALID_NETWORK_CONFIG: Code = Code(7);
    /// 8: invalid network namespace; the reference SDK uses it when
    /// `CNI_NETNS` is the plugin's own namespace.
    ///
    /// Go: `types.ErrInvalidNetNS`.
    pub const INVALID_NETNS: Code = Code(8);
    /// 11: "Try again later. If the plugin detects some transient condition
    /// that should clear up, it can use this code to notify the runtime it
    /// should re-try the operation later."
    ///
    /// Go: `types.ErrTryAgainLater`.
    pub const TRY_AGAIN_LATER: Code = Code(11);
    /// 50: STATUS: "The plugin is not available (i.e. cannot service ADD
    /// requests)".
    ///
    /// Go: `types.ErrPluginNotAvailable`.
    pub const PLUGIN_NOT_AVAILABLE: Code = Code(50);
    /// 51: STATUS: "The plugin is not available, and existing containers in
    /// the network may have limited connectivity".
    ///
    /// Go: `types.ErrLimitedConnectivity`.
    pub const LIMITED_CONNECTIVITY: Code = Code(51);
    /// 999: internal error; the reference SDK's code for a plugin error that
    /// is not a typed CNI error.
    ///
    /// Go: `types.ErrInternal`.
    pub const INTERNAL: Code = Code(999);

    /// Whether the code is one of the well-known ones above.
    pub fn is_well_known(self) -> bool {
        matches!(self.0, 1..=8 | 11 | 50 | 51 | 999)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A CNI error result: `{"cniVersion": ..., "code": N, "msg": ..., "details": ...}`.
///
/// "Plugins should output a JSON object with the following keys if they
/// encounter an error: `code`: A numeric error code; `msg`: A short message
/// characterizing the error; `details`: A longer message describing the
/// error." (spec, section 5). `details` is omitted when empty, and
/// `cniVersion` is filled in by whoever prints the error (the entry point
/// uses the configuration's version).
///
/// Go: `types.Error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct Error {
    /// The version the error is printed in, when known.
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cni_version: Option<String>,
    /// The error code.
    pub code: Code,
    /// A short message characterizing the error.
    #[serde(default)]
    pub msg: String,
    /// A longer message describing the error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub details: String,
}

impl fmt::Display for Error {
    /// `msg; details`, as the reference formats its errors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)?;
        if !self.details.is_empty() {
            write!(f, "; {}", self.details)?;
        }
        Ok(())
    }
}

impl Error {
    /// An error with a code and message and no details.
    ///
    /// Go: `types.NewError`.
    pub fn new(code: Code, msg: impl Into<String>) -> Error {
        Error {
            cni_version: None,
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    /// Sets the details.
    pub fn with_details(mut self, details: impl Into<String>) -> Error {
        self.details = details.into();
        self
    }

    /// Sets the version the error is printed in.
    pub fn with_version(mut self, version: impl Into<String>) -> Error {
        self.cni_version = Some(version.into());
        self
    }

    /// Code 999 with the error's message, and its `source()` chain, if any,
    /// in `details` (`caused by: a: b`).
    pub fn internal(err: &(dyn std::error::Error + 'static)) -> Error {
        let mut details = String::new();
        let mut source = err.source();
        while let Some(cause) = source {
            details.push_str(if details.is_empty() {
                "caused by: "
            } else {
                ": "
            });
            details.push_str(&cause.to_string());
            source = cause.source();
        }
        Error::new(Code::INTERNAL, err.to_string()).with_details(details)
    }

    /// Code 5 (I/O failure) for a failed file operation, naming the
    /// operation and the path in `msg` ("failed to write /run/x.json") and
    /// keeping the system's answer in `details`. The spec's own example of
    /// code 5 is such a failure: "failed to read network config bytes from
    /// stdin".
    ///
    /// ```
    /// use cni_types::{Code, Error};
    ///
    /// let path = std::path::Path::new("/nonexistent/cni/state.json");
    /// let err = std::fs::read(path).map_err(|e| Error::io("read", path, e)).unwrap_err();
    /// assert_eq!(err.code, Code::IO_FAILURE);
    /// assert_eq!(err.msg, "failed to read /nonexistent/cni/state.json");
    /// assert!(err.details.contains("No such file"));
    /// ```
    ///
    /// Go: `fmt.Errorf("failed to %s %q: %v", ..)` in the reference plugins;
    /// one constructor here, as plugins `pkg/errors.Annotate` is one there.
    pub fn io(op: &str, path: impl AsRef<std::path::Path>, err: std::io::Error) -> Error {
        Error::new(
            Code::IO_FAILURE,
            format!("failed to {op} {}", path.as_ref().display()),
        )
        .with_details(err.to_string())
    }

    /// Code 7 (invalid network config) naming the configuration field in
    /// `msg` (`invalid ipam.type`) and keeping why in `details`: the value
    /// and the reason, or the decoder's own words. The spec: "If some
    /// validations on network configs do not pass, this error will be
    /// raised."
    ///
    /// ```
    /// use cni_types::{Code, Error};
    ///
    /// let err = Error::invalid_config("mtu", "70000: more than 65535");
    /// assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
    /// assert_eq!((err.msg.as_str(), err.details.as_str()), ("invalid mtu", "70000: more than 65535"));
    /// ```
    ///
    /// Go: `types.NewError(types.ErrInvalidNetworkConfig, ..)`, which the
    /// reference plugins rarely use (most of their configuration errors
    /// are code 999); one constructor here so every field is named.
    pub fn invalid_config(field: &str, details: impl fmt::Display) -> Error {
        Error::new(Code::INVALID_NETWORK_CONFIG, format!("invalid {field}"))
            .with_details(details.to_string())
    }

    /// Code 4 (invalid environment variables) naming the variable in `msg`
    /// (`invalid CNI_ARGS`) and keeping why in `details`, as the spec asks:
    /// "The error message must contain the names of invalid variables."
    ///
    /// ```
    /// use cni_types::{Code, Error};
    ///
    /// let err = Error::invalid_env("CNI_ARGS", "\"IP\": not a KEY=VALUE pair");
    /// assert_eq!((err.code, err.msg.as_str()), (Code::INVALID_ENVIRONMENT_VARIABLES, "invalid CNI_ARGS"));
    /// ```
    ///
    /// Go: `types.NewError(types.ErrInvalidEnvironmentVariables, ..)`.
    pub fn invalid_env(variable: &str, details: impl fmt::Display) -> Error {
        Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            format!("invalid {variable}"),
        )
        .with_details(details.to_string())
    }

    /// Code 6 (decoding failure) naming what could not be decoded in `msg`
    /// (`failed to decode prevResult`) and keeping the decoder's answer in
    /// `details`. The spec's example: "failed to unmarshal network config
    /// from bytes".
    ///
    /// ```
    /// use cni_types::{Code, Error};
    ///
    /// let err = serde_json::from_str::<u8>("x").map_err(|e| Error::decoding("the answer", e)).unwrap_err();
    /// assert_eq!((err.code, err.msg.as_str()), (Code::DECODING_FAILURE, "failed to decode the answer"));
    /// assert!(err.details.contains("expected value"));
    /// ```
    ///
    /// Go: `types.NewError(types.ErrDecodingFailure, ..)`.
    pub fn decoding(what: &str, err: impl fmt::Display) -> Error {
        Error::new(Code::DECODING_FAILURE, format!("failed to decode {what}"))
            .with_details(err.to_string())
    }

    /// Code 11 (try again later) with a message saying what is not ready
    /// and the cause in `details`. The spec: "If the plugin detects some
    /// transient condition that should clear up, it can use this code to
    /// notify the runtime it should re-try the operation later."
    ///
    /// ```
    /// use cni_types::{Code, Error};
    ///
    /// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    /// let err = Error::try_again_later("the agent is not reachable", refused);
    /// assert_eq!((err.code, err.msg.as_str()), (Code::TRY_AGAIN_LATER, "the agent is not reachable"));
    /// assert!(!err.details.is_empty());
    /// ```
    ///
    /// Go: `types.NewError(types.ErrTryAgainLater, ..)`.
    pub fn try_again_later(msg: impl Into<String>, details: impl fmt::Display) -> Error {
        Error::new(Code::TRY_AGAIN_LATER, msg).with_details(details.to_string())
    }

    /// Turns any error into a CNI error: a CNI [`Error`] (possibly boxed)
    /// keeps its code; the SDK's own errors that have a code take it
    /// ([`CniArgsError`](crate::CniArgsError): 4); anything else becomes
    /// code 999 via [`Error::internal`].
    pub fn from_boxed(err: Box<dyn std::error::Error + Send + Sync + 'static>) -> Error {
        let err = match err.downcast::<Error>() {
            Ok(cni) => return *cni,
            Err(other) => other,
        };
        match err.downcast::<crate::CniArgsError>() {
            Ok(args) => Error::from(*args),
            Err(other) => Error::internal(other.as_ref()),
        }
    }

    /// The error as the spec prints it, pretty with four-space indents as the
    /// reference does, followed by a newline.
    pub fn to_json(&self) -> Vec<u8> {
        crate::print::pretty(self)
    }
}

impl From<std::io::Error> for Error {
    /// An I/O failure, code 5.
    fn from(err: std::io::Error) -> Error {
        Error::new(Code::IO_FAILURE, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_prints_as_the_spec_shows_and_omits_empty_details() {
        let e = Error::new(Code::INVALID_NETWORK_CONFIG, "bad").with_version("1.0.0");
        let v: serde_json::Value = serde_json::from_slice(&e.to_json()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"cniVersion": "1.0.0", "code": 7, "msg": "bad"})
        );
        let e = e.with_details("more");
        let v: serde_json::Value = serde_json::from_slice(&e.to_json()).unwrap();
        assert_eq!(v["details"], "more");
        assert_eq!(e.to_string(), "bad; more");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn foreign_errors_become_internal_with_their_cause_chain() {
        let boxed: Box<dyn std::error::Error + Send + Sync> =
            Box::new(Outer(std::io::Error::other("disk on fire")));
        let e = Error::from_boxed(boxed);
        assert_eq!(e.code, Code::INTERNAL);
        assert_eq!(e.msg, "outer");
        assert_eq!(e.details, "caused by: disk on fire");
    }

    #[test]
    fn cni_errors_keep_their_code_through_a_box() {
        let boxed: Box<dyn std::error::Error + Send + Sync> =
            Box::new(Error::new(Code(123), "mine"));
        assert_eq!(Error::from_boxed(boxed).code, Code(123));
    }

    #[test]
    fn well_known_codes() {
        for c in [1, 2, 3, 4, 5, 6, 7, 8, 11, 50, 51, 999] {
            assert!(Code(c).is_well_known());
        }
        assert!(!Code(9).is_well_known());
        assert!(!Code(100).is_well_known());
    }
}
