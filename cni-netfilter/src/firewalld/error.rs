//! What can go wrong talking to firewalld, and the CNI code for each.

use std::io;

use cni_types::{Code, Error};

use super::address::SYSTEM_BUS_VARIABLE;

/// The bus's answer when the called peer timed out or left without
/// replying (firewalld stopped in the middle of the call).
const NO_REPLY: &str = "org.freedesktop.DBus.Error.NoReply";

/// What went wrong talking to firewalld over the system bus.
///
/// `From<FirewalldError> for cni_types::Error` gives the code a plugin
/// answers with; see there.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FirewalldError {
    /// An argument that cannot be sent (a zone or source holding NUL).
    #[error("invalid {what} {value:?}: {reason}")]
    Invalid {
        /// What it is: "argument".
        what: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The bus address (from `DBUS_SYSTEM_BUS_ADDRESS`) names no socket
    /// this client can connect to.
    #[error("invalid D-Bus address {address:?}: {reason}")]
    Address {
        /// The address as given.
        address: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No bus answers at the address: the socket is missing, refused or
    /// broke mid-call.
    #[error("the system bus at {address} is unreachable")]
    Unreachable {
        /// The address tried.
        address: String,
        /// The system's answer.
        #[source]
        source: io::Error,
    },
    /// The bus refused our authentication (`AUTH EXTERNAL` with our uid).
    #[error("the system bus refused to authenticate us: {answer:?}")]
    Auth {
        /// The bus's answer line.
        answer: String,
    },
    /// No answer within the time this client waits for one.
    #[error("no answer to {method} within {waited:?}")]
    Timeout {
        /// The call: `org.fedoraproject.FirewallD1.zone.addSource`.
        method: String,
        /// How long we waited.
        waited: std::time::Duration,
    },
    /// Nobody owns `org.fedoraproject.FirewallD1` on the bus: firewalld is
    /// not running (or stopped between two calls).
    #[error("firewalld is not running (nobody owns {name} on the system bus)")]
    NotRunning {
        /// The bus name asked for.
        name: &'static str,
    },
    /// firewalld (or the bus) answered a call with an error.
    #[error("{method}({args}) failed: {message}")]
    Remote {
        /// The call: `org.fedoraproject.FirewallD1.zone.addSource`.
        method: String,
        /// Its arguments, quoted and comma-separated.
        args: String,
        /// The error's D-Bus name: `org.fedoraproject.FirewallD1.Exception`.
        name: String,
        /// The error's message: `INVALID_ZONE: nosuch`.
        message: String,
    },
    /// An answer this client could not parse, or larger than it reads.
    #[error("unexpected answer from the system bus: {reason}")]
    Malformed {
        /// What was wrong.
        reason: String,
    },
}

impl FirewalldError {
    /// firewalld's own error code for a [`FirewalldError::Remote`] from
    /// firewalld: the part of the message before `:` (`INVALID_ZONE`,
    /// `ZONE_ALREADY_SET`, `UNKNOWN_SOURCE`), as firewalld's `FirewallError`
    /// formats it.
    pub fn firewalld_code(&self) -> Option<&str> {
        match self {
            FirewalldError::Remote { name, message, .. } if name == super::EXCEPTION => {
                Some(message.split_once(':').map_or(message.as_str(), |(c, _)| c))
            }
            _ => None,
        }
    }

    pub(crate) fn invalid(
        what: &'static str,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> FirewalldError {
        FirewalldError::Invalid {
            what,
            value: value.into(),
            reason: reason.into(),
        }
    }
}

impl From<FirewalldError> for Error {
    /// - Code 11 (try again later) when the bus or firewalld cannot be
    ///   reached, does not answer in time (ours or the bus's `NoReply`), or
    ///   firewalld is not running: the spec's "transient condition that
    ///   should clear up" (firewalld starting, reloading or restarting,
    ///   dbus restarting). The reference answers 999 for all of these.
    /// - Code 7 (invalid network config) for firewalld's `INVALID_ZONE`,
    ///   which comes from the configuration's `firewalldZone`, and for an
    ///   argument that cannot be sent.
    /// - Code 4 (invalid environment variables) for an unusable
    ///   `DBUS_SYSTEM_BUS_ADDRESS`.
    /// - Code 999 (internal) for the rest, as the reference answers for a
    ///   failed call.
    fn from(err: FirewalldError) -> Error {
        let code = match &err {
            FirewalldError::Unreachable { .. }
            | FirewalldError::Timeout { .. }
            | FirewalldError::NotRunning { .. } => Code::TRY_AGAIN_LATER,
            FirewalldError::Remote { name, .. } if name == NO_REPLY => Code::TRY_AGAIN_LATER,
            FirewalldError::Invalid { .. } => Code::INVALID_NETWORK_CONFIG,
            e if e.firewalld_code() == Some("INVALID_ZONE") => Code::INVALID_NETWORK_CONFIG,
            FirewalldError::Address { .. } => {
                return Error::invalid_env(SYSTEM_BUS_VARIABLE, &err);
            }
            _ => Code::INTERNAL,
        };
        Error {
            code,
            ..Error::internal(&err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(name: &str, message: &str) -> FirewalldError {
        FirewalldError::Remote {
            method: "org.fedoraproject.FirewallD1.zone.addSource".into(),
            args: "\"nosuch\", \"10.1.0.2/32\"".into(),
            name: name.into(),
            message: message.into(),
        }
    }

    #[test]
    fn a_missing_zone_is_a_configuration_error_naming_the_zone() {
        let cni = Error::from(remote(super::super::EXCEPTION, "INVALID_ZONE: nosuch"));
        assert_eq!(cni.code, Code::INVALID_NETWORK_CONFIG);
        assert!(cni.msg.contains("nosuch"), "{cni:?}");
        assert!(cni.msg.contains("addSource"), "{cni:?}");
    }

    #[test]
    fn firewalld_not_running_or_unreachable_asks_to_try_again_later() {
        let not_running = Error::from(FirewalldError::NotRunning {
            name: super::super::FIREWALLD_NAME,
        });
        assert_eq!(not_running.code, Code::TRY_AGAIN_LATER);
        assert!(not_running.msg.contains("not running"), "{not_running:?}");
        let unreachable = Error::from(FirewalldError::Unreachable {
            address: "unix:path=/nonexistent".into(),
            source: io::ErrorKind::NotFound.into(),
        });
        assert_eq!(unreachable.code, Code::TRY_AGAIN_LATER);
        assert!(unreachable.msg.contains("/nonexistent"), "{unreachable:?}");
        let left = Error::from(remote(NO_REPLY, "Message recipient disconnected"));
        assert_eq!(left.code, Code::TRY_AGAIN_LATER);
    }

    #[test]
    fn an_unusable_bus_address_names_the_variable() {
        let cni = Error::from(FirewalldError::Address {
            address: "tcp:host=x".into(),
            reason: "only tcp".into(),
        });
        assert_eq!(cni.code, Code::INVALID_ENVIRONMENT_VARIABLES);
        assert!(cni.msg.contains(SYSTEM_BUS_VARIABLE), "{cni:?}");
    }

    #[test]
    fn other_failures_are_internal_and_keep_firewalld_words() {
        let err = remote(
            super::super::EXCEPTION,
            "ZONE_CONFLICT: '10.1.0.2' already bound",
        );
        assert_eq!(err.firewalld_code(), Some("ZONE_CONFLICT"));
        let cni = Error::from(err);
        assert_eq!(cni.code, Code::INTERNAL);
        assert!(cni.msg.contains("ZONE_CONFLICT"), "{cni:?}");
        let bus = remote("org.freedesktop.DBus.Error.AccessDenied", "INVALID_ZONE: x");
        assert_eq!(bus.firewalld_code(), None);
    }
}
