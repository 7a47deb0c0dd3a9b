//! The one error of this crate, and its conversion to a CNI error.

use std::io;
use std::path::PathBuf;

use cni_types::{Code, Error};

use crate::{LinkId, Op};

/// What went wrong talking to the kernel, naming the object concerned.
///
/// A kernel refusal keeps its `io::Error` (and so its errno, see
/// [`NetError::errno`]) as the source. The crate does not decide the CNI
/// code a plugin answers with: `From<NetError> for cni_types::Error` gives
/// a sensible default, and [`NetError::with_code`] another.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// The namespace path does not exist.
    #[error("network namespace {} does not exist", path.display())]
    NoSuchNetns {
        /// The path given.
        path: PathBuf,
    },
    /// The path exists but is not a network namespace (Go:
    /// `ns.NSPathNotNSErr`).
    #[error("{} is not a network namespace", path.display())]
    NotANetns {
        /// The path given.
        path: PathBuf,
    },
    /// The namespace path could not be opened or entered.
    #[error("failed to {op} network namespace {}", path.display())]
    Netns {
        /// What was attempted: [`Op::OpenNetns`], [`Op::EnterNetns`],
        /// [`Op::OpenSocket`] ...
        op: Op,
        /// The namespace's path.
        path: PathBuf,
        /// The system's refusal.
        #[source]
        source: io::Error,
    },
    /// No link of that name (or index) in the namespace.
    #[error("link {0} not found")]
    NoSuchLink(LinkId),
    /// An interface name the kernel would refuse (empty, over 15 bytes,
    /// `.`/`..`, with `/`, `:` or whitespace) or holding a control
    /// character; see [`crate::validate_ifname`] (Go: `ip.ValidateIfName`
    /// in containernetworking/cni `pkg/utils`).
    #[error("invalid interface name {name:?}: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An MTU outside 68..=65535 (see [`crate::validate_mtu`]); the
    /// message is the detail a plugin puts under its own "invalid mtu".
    #[error("{0}: must be between 68 and 65535")]
    InvalidMtu(u32),
    /// A sysctl name outside `net.*` or that would escape `/proc/sys`.
    #[error("invalid sysctl name {name:?}: {reason}")]
    InvalidSysctl {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A sysctl value holding a newline or NUL (see
    /// [`crate::validate_sysctl_value`]).
    #[error("invalid value {value:?} for sysctl {name}: it holds a newline or NUL")]
    InvalidSysctlValue {
        /// The sysctl's name.
        name: String,
        /// The value given.
        value: String,
    },
    /// A qdisc the kernel cannot hold as asked (a tbf rate or bucket of 0
    /// bytes, a queue over 4 GiB); the message says which and why.
    #[error("invalid {kind} qdisc: {reason}")]
    InvalidQdisc {
        /// The qdisc's kind (`tbf`).
        kind: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The kernel (or `/proc/sys`) refused an operation.
    #[error("failed to {op} {object}")]
    Kernel {
        /// What was attempted: [`Op::AddAddress`], [`Op::SetMtu`] ...
        op: Op,
        /// The object: `10.1.0.2/24 on eth0`, `link eth0`.
        object: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// The kernel lacks the module a link kind needs: it refused to
    /// create one with `EOPNOTSUPP` (no `CONFIG_MACVLAN`, `CONFIG_IPVLAN`,
    /// `CONFIG_VLAN_8021Q`, `CONFIG_DUMMY`), or has no `/dev/net/tun`.
    #[error("the kernel has no {feature} support: failed to {op} {object}")]
    NoKernelSupport {
        /// The missing feature: `vlan (8021q)`, `ipvlan` ...
        feature: &'static str,
        /// What was attempted: [`Op::CreateVlan`] ...
        op: Op,
        /// The link: `vlan link "eth0" on link "ens3"`.
        object: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// A result that cannot be applied as it is: an `ips` entry pointing
    /// at another interface, a malformed MAC.
    #[error("invalid result: {0}")]
    InvalidResult(String),
    /// CHECK: the live namespace differs from the result; the first
    /// difference found.
    #[error("{0}")]
    Differs(String),
    /// A state the kernel reaches on its own did not come in time.
    #[error("timed out waiting for {0}")]
    Timeout(String),
}

impl NetError {
    /// The errno the kernel answered with, when this is a kernel refusal.
    pub fn errno(&self) -> Option<i32> {
        match self {
            NetError::Kernel { source, .. }
            | NetError::Netns { source, .. }
            | NetError::NoKernelSupport { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }

    /// Whether the object is not there: a namespace path that does not
    /// exist, a link not found, or the kernel's `ENODEV`, `ENOENT` or
    /// `ESRCH` (a link, address or route gone). DEL reads it as success.
    ///
    /// Go: `ip.ErrLinkNotFound`, `os.IsNotExist`, `errors.Is(err,
    /// syscall.ESRCH)`.
    pub fn is_not_found(&self) -> bool {
        use nix::errno::Errno;
        match self {
            NetError::NoSuchNetns { .. } | NetError::NoSuchLink(_) => true,
            _ => [Errno::ENODEV, Errno::ENOENT, Errno::ESRCH]
                .iter()
                .any(|e| self.errno() == Some(*e as i32)),
        }
    }

    /// Whether the kernel refused because the object is already there
    /// (`EEXIST`): a link name taken, an address or route present.
    ///
    /// Go: `os.IsExist`, `errors.Is(err, syscall.EEXIST)`.
    pub fn is_exists(&self) -> bool {
        self.errno() == Some(nix::errno::Errno::EEXIST as i32)
    }

    /// The operation that failed, for a kernel or namespace failure.
    pub fn op(&self) -> Option<Op> {
        match self {
            NetError::Kernel { op, .. }
            | NetError::Netns { op, .. }
            | NetError::NoKernelSupport { op, .. } => Some(*op),
            _ => None,
        }
    }

    /// The CNI error for this, with the plugin's own code.
    pub fn with_code(self, code: Code) -> Error {
        let mut err = Error::from(self);
        err.code = code;
        err
    }

    pub(crate) fn kernel(
        op: Op,
        object: impl std::fmt::Display,
    ) -> impl FnOnce(io::Error) -> NetError {
        move |source| NetError::Kernel {
            op,
            object: object.to_string(),
            source,
        }
    }
}

impl NetError {
    /// A refusal to create a link of a kind needing `feature`:
    /// [`NetError::NoKernelSupport`] for `EOPNOTSUPP`, else
    /// [`NetError::Kernel`].
    pub(crate) fn for_new_link(
        feature: &'static str,
        op: Op,
        object: String,
        source: io::Error,
    ) -> NetError {
        if source.raw_os_error() == Some(nix::errno::Errno::EOPNOTSUPP as i32) {
            NetError::NoKernelSupport {
                feature,
                op,
                object,
                source,
            }
        } else {
            NetError::Kernel { op, object, source }
        }
    }
}

impl From<NetError> for Error {
    /// The default codes:
    /// - 8 (invalid network namespace) for a namespace that is absent,
    ///   not a namespace or cannot be entered. The reference plugins answer
    ///   999 (an untyped Go error) here; 8 is the code the reference SDK
    ///   gives a bad `CNI_NETNS`, so a runtime can tell this case apart.
    /// - 7 (invalid network config) for an invalid interface name, MTU,
    ///   sysctl name, sysctl value or qdisc: all come from the
    ///   configuration or the runtime's input.
    /// - 999 (internal) for the rest, as the reference does for a kernel
    ///   refusal, a missing link or a CHECK difference; a plugin chooses
    ///   its own with [`NetError::with_code`].
    ///
    /// `msg` is the error's message; `details` its cause (`File exists
    /// (os error 17)`), when there is one.
    fn from(err: NetError) -> Error {
        let code = match &err {
            NetError::NoSuchNetns { .. } | NetError::NotANetns { .. } | NetError::Netns { .. } => {
                Code::INVALID_NETNS
            }
            NetError::InvalidName { .. }
            | NetError::InvalidMtu(_)
            | NetError::InvalidSysctl { .. }
            | NetError::InvalidSysctlValue { .. }
            | NetError::InvalidQdisc { .. } => Code::INVALID_NETWORK_CONFIG,
            _ => Code::INTERNAL,
        };
        let details = std::error::Error::source(&err)
            .map(|s| s.to_string())
            .unwrap_or_default();
        Error::new(code, err.to_string()).with_details(details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_refusals_keep_the_errno_and_name_the_object() {
        let err = NetError::kernel(Op::AddAddress, "10.1.0.2/24 on eth0")(
            io::Error::from_raw_os_error(17),
        );
        assert_eq!(err.errno(), Some(17));
        assert!(err.is_exists() && !err.is_not_found());
        assert_eq!(err.op(), Some(Op::AddAddress));
        let cni = Error::from(err);
        assert_eq!(cni.code, Code::INTERNAL);
        assert_eq!(cni.msg, "failed to add address 10.1.0.2/24 on eth0");
        assert!(cni.details.contains("os error 17"), "{cni:?}");
    }

    #[test]
    fn what_is_gone_reads_as_not_found() {
        let gone = NetError::kernel(Op::DeleteRoute, "10.1.0.0/24 dev eth0")(
            io::Error::from_raw_os_error(nix::errno::Errno::ESRCH as i32),
        );
        assert!(gone.is_not_found() && !gone.is_exists());
        assert!(NetError::NoSuchLink(LinkId::Index(7)).is_not_found());
        let refused = NetError::kernel(Op::SetMtu, "link \"eth0\"")(io::Error::from_raw_os_error(
            nix::errno::Errno::EINVAL as i32,
        ));
        assert!(!refused.is_not_found());
    }

    #[test]
    fn namespace_errors_are_code_8_and_names_code_7() {
        let absent = NetError::NoSuchNetns {
            path: "/run/netns/x".into(),
        };
        assert_eq!(Error::from(absent).code, Code::INVALID_NETNS);
        let name = NetError::InvalidName {
            name: "x".repeat(16),
            reason: "longer than 15 bytes",
        };
        assert_eq!(Error::from(name).code, Code::INVALID_NETWORK_CONFIG);
        let mtu = NetError::InvalidMtu(20);
        assert_eq!(Error::from(mtu).code, Code::INVALID_NETWORK_CONFIG);
        let differs = NetError::Differs("route to 0.0.0.0/0 is missing".into());
        assert_eq!(differs.with_code(Code(102)).code, Code(102));
    }
}
