//! The one error of this crate, and its conversion to a CNI error.

use std::io;

use cni_types::{Code, Error};

use crate::BackendKind;

/// What went wrong describing or applying packet filter rules, naming the
/// object concerned (table, chain, rule comment, command).
///
/// A kernel refusal keeps its `io::Error` (and so its errno, see
/// [`FilterError::errno`]); a failed command keeps its exit status and the
/// start of its stderr. `From<FilterError> for cni_types::Error` gives the
/// code a plugin answers with: 7 for a description that cannot be applied
/// as it is, 999 for the rest (the reference's untyped errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// A name, comment or value that no backend would accept, found
    /// before anything was changed.
    #[error("invalid {what} {value:?}: {reason}")]
    Invalid {
        /// What it is: "chain name", "comment", "interface name".
        what: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Something this backend cannot express (a named set under iptables,
    /// an `inet` table under iptables), found before anything was changed.
    #[error("the {backend} backend cannot express {what}")]
    Unsupported {
        /// The backend asked.
        backend: BackendKind,
        /// What it cannot do.
        what: String,
    },
    /// The kernel refused a netlink request (nftables).
    #[error("failed to {op} {object}")]
    Kernel {
        /// What was attempted: "add rule", "list rules of".
        op: &'static str,
        /// The object: `chain ip cni_hostport hostports`.
        object: String,
        /// The kernel's answer, with its errno.
        #[source]
        source: io::Error,
    },
    /// A command could not be started or its pipes failed.
    #[error("failed to run {command}")]
    Spawn {
        /// The command line, as `iptables-restore --noflush -w`.
        command: String,
        /// The system's answer.
        #[source]
        source: io::Error,
    },
    /// A command ran and failed.
    #[error("{command} failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status, or the signal that ended it.
        status: String,
        /// The start of what it printed on stderr (at most
        /// [`STDERR_LIMIT`](crate::iptables::STDERR_LIMIT) bytes).
        stderr: String,
    },
    /// A rule or chain that should be there is not (found by a check).
    #[error("{what} is missing")]
    Missing {
        /// What: "the iptables rule for 10.1.0.5/24 in POSTROUTING".
        what: String,
    },
    /// Another writer kept us from changing anything before our deadline:
    /// a lock held past it (naming the lock file and its holder), or an
    /// nftables ruleset that kept changing under every attempt. Nothing
    /// was changed; trying again later may succeed (CNI code 11).
    #[error("{what}")]
    Busy {
        /// What we waited for, and who held it.
        what: String,
    },
    /// iptables could not list a table: its `-save` command could not
    /// start or failed, so iptables may be unusable on this host (see
    /// [`cannot_list`](crate::cannot_list)). Nothing was changed: a
    /// transaction lists before it changes anything. Says what the
    /// command's own error says.
    #[error(transparent)]
    Unlisted(Box<FilterError>),
    /// The same work failed under both backends.
    #[error("iptables: {iptables}; nftables: {nftables}")]
    Both {
        /// The iptables backend's error.
        iptables: Box<FilterError>,
        /// The nftables backend's error.
        nftables: Box<FilterError>,
    },
    /// A peer answered more than this crate reads, or something it could
    /// not parse.
    #[error("unexpected answer from {peer}: {reason}")]
    Malformed {
        /// Who answered: "the kernel", "iptables-save".
        peer: &'static str,
        /// What was wrong.
        reason: String,
    },
}

impl FilterError {
    /// The errno the kernel or the system answered with, when there is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            FilterError::Kernel { source, .. } | FilterError::Spawn { source, .. } => {
                source.raw_os_error()
            }
            FilterError::Unlisted(cause) => cause.errno(),
            _ => None,
        }
    }

    /// The CNI error for this, with the plugin's own code.
    pub fn with_code(self, code: Code) -> Error {
        Error {
            code,
            ..Error::from(self)
        }
    }

    pub(crate) fn invalid(
        what: &'static str,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> FilterError {
        FilterError::Invalid {
            what,
            value: value.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn kernel(op: &'static str, object: impl Into<String>, errno: i32) -> FilterError {
        FilterError::Kernel {
            op,
            object: object.into(),
            source: io::Error::from_raw_os_error(errno),
        }
    }
}

impl From<FilterError> for Error {
    /// Code 7 (invalid network config) for [`FilterError::Invalid`]
    /// ([`Error::invalid_config`]: `msg` names what, `details` the value
    /// and why) and [`FilterError::Unsupported`]: both come from what the
    /// configuration asked for. Code 999 (internal) for the rest, as the
    /// reference plugins answer for a failed `iptables` or `nft`, with the
    /// cause in `details` as [`Error::internal`] gives it. Code 11 (try
    /// again later) for [`FilterError::Busy`]: nothing was changed.
    fn from(err: FilterError) -> Error {
        match err {
            FilterError::Busy { what } => {
                Error::try_again_later(what, "nothing was changed; try again later")
            }
            FilterError::Invalid {
                what,
                value,
                reason,
            } => Error::invalid_config(what, format!("{value:?}: {reason}")),
            FilterError::Unsupported { .. } => Error {
                code: Code::INVALID_NETWORK_CONFIG,
                ..Error::internal(&err)
            },
            other => Error::internal(&other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_refusals_keep_the_errno_and_name_the_object() {
        let err = FilterError::kernel("add rule to", "chain ip t c (comment \"abc\")", 2);
        assert_eq!(err.errno(), Some(2));
        let cni = Error::from(err);
        assert_eq!(cni.code, Code::INTERNAL);
        assert_eq!(
            cni.msg,
            "failed to add rule to chain ip t c (comment \"abc\")"
        );
        assert!(cni.details.contains("os error 2"), "{cni:?}");
    }

    #[test]
    fn a_table_iptables_could_not_list_answers_with_its_cause_errno_and_words() {
        // What `cannot_list` and the plugins' choice of backend read.
        let cause = FilterError::Spawn {
            command: "iptables-save -t nat".into(),
            source: std::io::Error::from_raw_os_error(13),
        };
        let unlisted = FilterError::Unlisted(Box::new(cause));
        assert_eq!(unlisted.errno(), Some(13));
        let words = unlisted.to_string();
        assert!(words.contains("iptables-save"), "{words}");
        assert_eq!(Error::from(unlisted).code, Code::INTERNAL);
    }

    #[test]
    fn descriptions_a_backend_cannot_apply_are_configuration_errors() {
        let bad = FilterError::invalid("chain name", "a b", "contains ' '");
        let cni = Error::from(bad);
        assert_eq!(cni.code, Code::INVALID_NETWORK_CONFIG);
        assert_eq!(
            (cni.msg.as_str(), cni.details.as_str()),
            ("invalid chain name", "\"a b\": contains ' '")
        );
        let unsupported = FilterError::Unsupported {
            backend: BackendKind::Iptables,
            what: "an inet table".into(),
        };
        let cni = unsupported.with_code(Code(100));
        assert_eq!(cni.code, Code(100));
        assert_eq!(cni.msg, "the iptables backend cannot express an inet table");
    }
}
