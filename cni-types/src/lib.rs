//! CNI configuration, result and error types, for every spec version.
//!
//! - [`CniResult`] holds a success result of any version (0.1.0 .. 1.1.0);
//!   [`Result020`], [`Result040`] and [`Result100`] are the three shapes.
//!   Results parse in a given version, print, and convert between any two
//!   versions with the reference library's semantics.
//! - [`Error`] is the CNI error result, with the well-known [`Code`]s.
//! - [`NetConf`] is a plugin configuration, generic over the plugin's own
//!   fields; [`NetConfList`] a configuration list; [`UnknownFields`] keeps
//!   the keys your struct does not name, every number exactly as written.
//! - [`ValidAttachments`] is a GC request's list of attachments in use,
//!   with "no list" kept apart from "an empty list".
//! - [`CniArgs`] parses `CNI_ARGS`; [`validate`] holds the name rules.
//! - [`Mac`] is a hardware address; [`conventions::requested_mac`] finds
//!   the one a runtime asked for.
//! - [`read_regular_file`] reads a plugin's state file without following
//!   a link, waiting on a FIFO or reading past a bound.
//! - Addresses are typed: [`IpNetwork`] keeps the host part
//!   (`10.1.0.5/16` stays exactly that), gateways are [`std::net::IpAddr`].
//!
//! Results follow the spec strictly: keys a version does not define are
//! ignored when reading (as the reference does), while configurations keep
//! every unknown key so they round-trip.

mod args;
mod attachment;
mod config;
mod conflist;
pub mod conventions;
mod dns;
mod error;
#[cfg(unix)]
mod file;
mod gc;
mod go_fields;
mod ip;
mod mac;
mod prev_result;
mod print;
mod raw_de;
mod result;
mod route;
mod serde_util;
mod unknown;
pub mod validate;
mod wire_format;

pub use args::{CniArgs, CniArgsError, IGNORE_UNKNOWN};
pub use attachment::Attachment;
pub use cni_version::SpecVersion;
pub use config::{ConfigError, Extra, Ipam, NetConf};
pub use conflist::NetConfList;
pub use dns::Dns;
pub use error::{Code, Error};
#[cfg(unix)]
pub use file::read_regular_file;
pub use gc::ValidAttachments;
pub use go_fields::get as go_field;
pub use ip::{is_ipv4, IpFamily, IpNetwork, IpNetworkError};
pub use mac::{Mac, MacError};
pub use result::{
    CniResult, ConvertError, Interface, IpConfig, IpConfig020, IpConfig040, Result020, Result040,
    Result100, ResultError,
};
pub use route::Route;
pub use unknown::UnknownFields;
pub use wire_format::{InFormat, WireFormat};
