//! The well-known capabilities and `args` conventions (CONVENTIONS.md), as
//! typed, optional views over the raw sections.
//!
//! The sections stay raw maps so that a plugin never fails on a convention
//! it does not use; a plugin that does use one asks for it typed and gets an
//! error naming the key when its value is malformed.
//!
//! Keys are matched as the reference plugins' Go structs match them, at
//! every depth: the exact spelling, else the same name in another case
//! (Go's `encoding/json` folds case), and a `null` value is absent. So
//! what containerd's CRI sends reads as the reference reads it:
//!
//! ```
//! use cni_types::conventions::RuntimeConfig;
//!
//! let rc: RuntimeConfig = serde_json::from_str(r#"{
//!     "portMappings": [{"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""}],
//!     "bandwidth": {"IngressRate": 1000000, "IngressBurst": 4294967295},
//!     "io.kubernetes.cri.pod-annotations": null}"#).unwrap();
//! let port = &rc.port_mappings().unwrap().unwrap()[0];
//! assert_eq!((port.host_port, port.container_port, port.host_ip), (8080, 80, None));
//! assert_eq!(rc.bandwidth().unwrap().unwrap().ingress_burst, 4294967295);
//! ```
//!
//! Go takes the last of two keys naming one field; here the exact spelling
//! wins (the key order is not kept). Only an object that names a field
//! twice can tell.

mod args;
mod capabilities;
mod mac;

pub use args::{Args, Label};
pub use capabilities::{Bandwidth, IpRange, PortMapping, RuntimeConfig, RuntimeDns};
pub use mac::{requested_mac, MacPrecedence, MacSource, RequestedMac};

use serde::de::DeserializeOwned;

use crate::{Error, Extra};

/// Reads `map[key]` as `T` the way the reference's Go structs read it
/// ([`crate::go_fields`]: keys in any case, `null` as absent, at every
/// depth): `None` when absent or null, code 7 naming the section, key and
/// reason when malformed.
fn typed<T: DeserializeOwned>(section: &str, map: &Extra, key: &str) -> Result<Option<T>, Error> {
    let Some(value) = crate::go_fields::get(map, key) else {
        return Ok(None);
    };
    crate::go_fields::from_value(value)
        .map(Some)
        .map_err(|e| Error::invalid_config(&format!("{section}.{key}"), e))
}
