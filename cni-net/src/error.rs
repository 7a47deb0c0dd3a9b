//! The one error of this crate, and its conversion to a CNI error.

use std::io;
use std::path::PathBuf;

use cni_types::{Code, Error};

use crate::LinkId;

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
            NetError::Kernel { source, .. } | NetError::Netns { source, .. } => {
                source.raw_os_error()
            }
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
            NetError::Kernel { op, .. } | NetError::Netns { op, .. } => Some(*op),
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

/// Which operation failed: the verb of a [`NetError::Kernel`] or
/// [`NetError::Netns`], so a plugin matches on it rather than on text.
///
/// Its `Display` is the verb phrase the error message uses: `failed to
/// {op} {object}` (`failed to add address 10.1.0.2/24 to link "eth0"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// Open a namespace path ([`Netns::open`](crate::Netns::open)).
    OpenNetns,
    /// Enter a namespace (`setns`).
    EnterNetns,
    /// Create a namespace (the test kit).
    CreateNetns,
    /// Read a namespace's identity (`stat`).
    StatNetns,
    /// Open an rtnetlink socket ([`Netlink::open`](crate::Netlink::open)).
    OpenSocket,
    /// Look a link up (`ip link show NAME`).
    LookUpLink,
    /// List links, addresses or routes.
    List,
    /// Create a veth pair (`ip link add type veth`).
    CreateVeth,
    /// Create a bridge (`ip link add type bridge`).
    CreateBridge,
    /// Create a dummy link (`ip link add type dummy`).
    CreateDummy,
    /// Use an existing link as a bridge.
    UseAsBridge,
    /// Rename a link (`ip link set NAME name NEW`).
    Rename,
    /// Set a link up (`ip link set NAME up`).
    SetUp,
    /// Set a link down (`ip link set NAME down`).
    SetDown,
    /// Set promiscuous mode (`ip link set NAME promisc on|off`).
    SetPromisc,
    /// Set all-multicast mode (`ip link set NAME allmulticast on|off`).
    SetAllmulti,
    /// Set the MTU (`ip link set NAME mtu N`).
    SetMtu,
    /// Set the MAC address (`ip link set NAME address MAC`).
    SetMac,
    /// Make a link a bridge port (`ip link set NAME master BRIDGE`).
    SetMaster,
    /// Set hairpin mode of a bridge port.
    SetHairpin,
    /// Delete a link (`ip link del NAME`).
    DeleteLink,
    /// Add an address (`ip addr add`).
    AddAddress,
    /// Delete an address (`ip addr del`).
    DeleteAddress,
    /// Use an address whose duplicate address detection failed.
    UseAddress,
    /// Add or replace a route (`ip route add|replace`).
    AddRoute,
    /// Delete a route (`ip route del`).
    DeleteRoute,
    /// Read a sysctl.
    ReadSysctl,
    /// Write a sysctl.
    WriteSysctl,
}

impl Op {
    /// The verb phrase of the error message.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::OpenNetns => "open",
            Op::EnterNetns => "enter",
            Op::CreateNetns => "create",
            Op::StatNetns => "stat",
            Op::OpenSocket => "open a netlink socket in",
            Op::LookUpLink => "look up link",
            Op::List => "list",
            Op::CreateVeth => "create veth pair",
            Op::CreateBridge => "create bridge",
            Op::CreateDummy => "create dummy link",
            Op::UseAsBridge => "use",
            Op::Rename => "rename",
            Op::SetUp => "set up",
            Op::SetDown => "set down",
            Op::SetPromisc => "set promiscuous mode of",
            Op::SetAllmulti => "set all-multicast mode of",
            Op::SetMtu => "set the MTU of",
            Op::SetMac => "set the MAC address of",
            Op::SetMaster => "set the master of",
            Op::SetHairpin => "set hairpin mode of",
            Op::DeleteLink => "delete",
            Op::AddAddress => "add address",
            Op::DeleteAddress => "delete address",
            Op::UseAddress => "use address",
            Op::AddRoute => "add route",
            Op::DeleteRoute => "delete route",
            Op::ReadSysctl => "read sysctl",
            Op::WriteSysctl => "write sysctl",
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<NetError> for Error {
    /// The default codes:
    /// - 8 (invalid network namespace) for a namespace that is absent,
    ///   not a namespace or cannot be entered. The reference plugins answer
    ///   999 (an untyped Go error) here; 8 is the code the reference SDK
    ///   gives a bad `CNI_NETNS`, so a runtime can tell this case apart.
    /// - 7 (invalid network config) for an invalid interface or sysctl
    ///   name: both come from the configuration or the runtime's input.
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
            | NetError::InvalidSysctl { .. } => Code::INVALID_NETWORK_CONFIG,
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
