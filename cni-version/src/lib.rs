//! CNI specification versions and the rules that reconcile them.
//!
//! A CNI runtime and a plugin agree on a version in two places: the
//! configuration names one (`cniVersion`), and the plugin answers `VERSION`
//! with the list it supports. This crate holds both sides:
//!
//! - [`SpecVersion`]: a released spec version (0.1.0 .. 1.1.0), backed by
//!   [`semver`], ordered, with the known versions as constants.
//! - [`PluginInfo`]: the versions a plugin supports, *kept as the strings
//!   given* (the reference test double advertises the invalid `0.-42.0` on
//!   purpose, and runtime test suites look for it), its `VERSION` answer, and
//!   the runtime-side decoding of such an answer.
//! - [`reconcile`]: exact-string matching of a configuration's version against
//!   a plugin's supported set, as the reference library does.
//! - [`ConfigVersion`]: reading `cniVersion` (and 1.1.0's `cniVersions`) from a
//!   configuration.
//! - [`LooseVersion`]: the reference library's lenient `major.minor.micro`
//!   parser, which is what its ordering gates (CHECK needs >= 0.4.0, GC and
//!   STATUS >= 1.1.0) use. Matching it keeps our gates' error codes equal to
//!   the reference's on odd inputs such as `"1.0"` or `"0.-42.0"`.
//!
//! ```
//! use cni_version::{PluginInfo, SpecVersion};
//!
//! let info = PluginInfo::from_version(SpecVersion::V0_3_0);
//! assert!(info.reconcile("0.4.0").is_ok());
//! let err = info.reconcile("0.2.0").unwrap_err();
//! assert_eq!(err.details(), r#"config is "0.2.0", plugin supports ["0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"]"#);
//! ```

mod config_version;
mod loose;
mod plugin_info;
mod reconcile;
mod spec_version;

pub use config_version::{json_key_matches, peek_fields, ConfigVersion, ConfigVersionError};
pub use loose::{LooseVersion, LooseVersionError};
pub use plugin_info::{PluginInfo, PluginInfoDecodeError};
pub use reconcile::{reconcile, Incompatible};
pub use spec_version::{SpecVersion, SpecVersionError};
