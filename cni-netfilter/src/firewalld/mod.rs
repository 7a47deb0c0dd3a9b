//! firewalld over D-Bus: put a container's addresses into a zone as
//! sources, take them out, ask whether they are there. The firewall
//! plugin's `firewalld` backend.
//!
//! - [`Firewalld`]: a connection to the system bus on which firewalld
//!   owns its name; [`Firewalld::add_source`], [`Firewalld::remove_source`],
//!   [`Firewalld::query_source`] call `org.fedoraproject.FirewallD1.zone`.
//! - [`FirewalldError`] (`error.rs`): becomes a CNI error (11 when the bus
//!   or firewalld is not there, 7 for a zone firewalld does not know).
//! - `connection.rs`, `wire.rs`, `address.rs`: a small D-Bus client
//!   (unix socket, `AUTH EXTERNAL`, `Hello`, method calls with string
//!   arguments, answers bounded in size and time).
//!
//! # Example
//! ```no_run
//! use cni_netfilter::firewalld::Firewalld;
//!
//! match Firewalld::connect_system()? {
//!     Some(fw) => {
//!         fw.add_source("trusted", "10.88.0.5/32")?;
//!         assert!(fw.query_source("trusted", "10.88.0.5/32")?);
//!         fw.remove_source("trusted", "10.88.0.5/32")?;
//!     }
//!     None => { /* firewalld is not running: another backend, as the reference */ }
//! }
//! # Ok::<(), cni_netfilter::firewalld::FirewalldError>(())
//! ```
//!
//! # Why a client of our own, not zbus
//! Four calls with string arguments, answered by a string or a boolean,
//! need a few hundred lines: a marshaller for those signatures (and a
//! skipper for header fields of any type), `AUTH EXTERNAL`, and a loop
//! that waits for its reply. zbus's blocking API runs an async executor
//! underneath and brings serde, zvariant, enumflags2 and a dozen more
//! crates into every static plugin (several hundred KiB, and minutes of
//! compile time), for one plugin's optional backend.
//!
//! # Where we deliberately differ from the reference
//! - A firewalld that is not running when a call is made is
//!   [`FirewalldError::NotRunning`] (CNI code 11, try again later), not
//!   the bus's `ServiceUnknown` passed on as code 999.
//! - Every call has a time limit ([`CALL_TIMEOUT`]); godbus waits for ever.

mod address;
mod connection;
mod error;
pub(crate) mod wire;

use std::time::Duration;

pub use address::{DEFAULT_SYSTEM_BUS, SYSTEM_BUS_VARIABLE};
pub use error::FirewalldError;

use connection::{Connection, BUS};
use wire::{Call, Message};

/// firewalld's bus name, which it owns while it runs.
///
/// Go: `firewalldName` (plugins `plugins/meta/firewall/firewalld.go`).
pub const FIREWALLD_NAME: &str = "org.fedoraproject.FirewallD1";

/// The object firewalld's runtime interfaces live on.
///
/// Go: `firewalldPath`.
pub const FIREWALLD_PATH: &str = "/org/fedoraproject/FirewallD1";

/// The interface of runtime zone changes.
///
/// Go: `firewalldZoneInterface`.
pub const ZONE_INTERFACE: &str = "org.fedoraproject.FirewallD1.zone";

/// The D-Bus error name of everything firewalld refuses; its message
/// starts with firewalld's code (`INVALID_ZONE: nosuch`).
pub(crate) const EXCEPTION: &str = "org.fedoraproject.FirewallD1.Exception";

/// How long one step (connecting, one call) may take: libdbus's default
/// method call timeout, long enough for a firewalld that is reloading.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(25);

/// The bus's errors for a call to a name nobody owns.
const NO_OWNER_ERRORS: [&str; 2] = [
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
];

/// A connection to the system bus on which firewalld runs.
///
/// Go: `fwdBackend` (plugins `plugins/meta/firewall/firewalld.go`).
#[derive(Debug)]
pub struct Firewalld {
    conn: Connection,
}

impl Firewalld {
    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS`, else
    /// [`DEFAULT_SYSTEM_BUS`]) and gives `None` when nobody owns
    /// [`FIREWALLD_NAME`] there.
    ///
    /// An unreachable bus is an error ([`FirewalldError::Unreachable`]);
    /// a caller choosing a backend, as the reference's
    /// `isFirewalldRunning` does, treats it as "not running".
    ///
    /// Go: `dbus.SystemBus` and `isFirewalldRunning`.
    pub fn connect_system() -> Result<Option<Firewalld>, FirewalldError> {
        let address = match std::env::var(SYSTEM_BUS_VARIABLE) {
            Ok(address) if !address.is_empty() => address,
            Ok(_) | Err(std::env::VarError::NotPresent) => DEFAULT_SYSTEM_BUS.to_owned(),
            Err(std::env::VarError::NotUnicode(raw)) => {
                return Err(FirewalldError::Address {
                    address: raw.to_string_lossy().into_owned(),
                    reason: "it is not UTF-8".into(),
                })
            }
        };
        Firewalld::connect(&address)
    }

    /// As [`Firewalld::connect_system`], on the bus at `address`
    /// (`unix:path=/run/dbus/system_bus_socket`).
    pub fn connect(address: &str) -> Result<Option<Firewalld>, FirewalldError> {
        let conn = Connection::open(address, CALL_TIMEOUT)?;
        let owned = conn
            .call(&Call {
                member: "NameHasOwner",
                args: &[FIREWALLD_NAME],
                ..BUS
            })?
            .first_bool()?;
        Ok(owned.then_some(Firewalld { conn }))
    }

    /// Binds `source` (an address or network: `10.88.0.5/32`) to `zone`
    /// for as long as firewalld runs (`firewall-cmd --zone=ZONE
    /// --add-source=SOURCE`). A source already in that zone
    /// (`ZONE_ALREADY_SET`) is success, as in the reference.
    ///
    /// Go: `fwdBackend.Add`, one `addSource` call per address.
    pub fn add_source(&self, zone: &str, source: &str) -> Result<(), FirewalldError> {
        match self.zone_call("addSource", zone, source) {
            Err(e) if e.firewalld_code() == Some("ZONE_ALREADY_SET") => Ok(()),
            other => other.map(drop),
        }
    }

    /// Unbinds `source` from `zone` (`firewall-cmd --zone=ZONE
    /// --remove-source=SOURCE`). A source in no zone (`UNKNOWN_SOURCE`) is
    /// success: there is nothing to remove.
    ///
    /// Go: `fwdBackend.Del`, which ignores every error; this reports the
    /// others and leaves the choice to the caller.
    pub fn remove_source(&self, zone: &str, source: &str) -> Result<(), FirewalldError> {
        match self.zone_call("removeSource", zone, source) {
            Err(e) if e.firewalld_code() == Some("UNKNOWN_SOURCE") => Ok(()),
            other => other.map(drop),
        }
    }

    /// Whether `source` is bound to `zone` (`firewall-cmd --zone=ZONE
    /// --query-source=SOURCE`).
    ///
    /// Go: `fwdBackend.Check`.
    pub fn query_source(&self, zone: &str, source: &str) -> Result<bool, FirewalldError> {
        self.zone_call("querySource", zone, source)?.first_bool()
    }

    fn zone_call(&self, member: &str, zone: &str, source: &str) -> Result<Message, FirewalldError> {
        let call = Call {
            destination: FIREWALLD_NAME,
            path: FIREWALLD_PATH,
            interface: ZONE_INTERFACE,
            member,
            args: &[zone, source],
        };
        self.conn.call(&call).map_err(|e| match e {
            FirewalldError::Remote { ref name, .. } if NO_OWNER_ERRORS.contains(&name.as_str()) => {
                FirewalldError::NotRunning {
                    name: FIREWALLD_NAME,
                }
            }
            other => other,
        })
    }
}
