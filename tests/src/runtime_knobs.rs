//! What both runtimes under test ([`Driver`](crate::Driver), libcni's, and
//! [`Cnitool`](crate::Cnitool), ours) are told about an attachment, with
//! the same setters on both so a test can drive either alike.

use std::path::PathBuf;

/// The setters and accessors of a runtime with the fields `bin`,
/// `cni_path: Vec<PathBuf>`, `container_id`, `ifname`, `cni_args:
/// Option<String>` and `cap_args: Option<Value>`; `$bin` names its binary.
macro_rules! runtime_knobs {
    ($bin:literal) => {
        /// Sets the container id (`CNI_CONTAINERID` the plugins see).
        pub fn with_container_id(mut self, id: &str) -> Self {
            self.container_id = id.to_owned();
            self
        }

        /// Sets the interface name (`CNI_IFNAME` the plugins see).
        pub fn with_ifname(mut self, ifname: &str) -> Self {
            self.ifname = ifname.to_owned();
            self
        }

        /// Sets `CNI_ARGS` (`K=V;K2=V2`).
        pub fn with_cni_args(mut self, args: &str) -> Self {
            self.cni_args = Some(args.to_owned());
            self
        }

        /// Sets the capability arguments (a JSON object), injected as
        /// `runtimeConfig` into plugins that declare the capability.
        pub fn with_cap_args(mut self, caps: serde_json::Value) -> Self {
            self.cap_args = Some(caps);
            self
        }

        #[doc = concat!("Path of the `", $bin, "` binary.")]
        pub fn bin(&self) -> &std::path::Path {
            &self.bin
        }

        /// The `CNI_PATH` value the runtime hands to plugins (entries
        /// joined with `:`).
        pub fn cni_path(&self) -> String {
            $crate::runtime_knobs::cni_path_value(&self.cni_path)
        }
    };
}
pub(crate) use runtime_knobs;

/// The `CNI_PATH` value of `entries`: joined with `:`.
///
/// # Panics
/// If an entry contains a `:`.
pub(crate) fn cni_path_value(entries: &[PathBuf]) -> String {
    std::env::join_paths(entries)
        .expect("CNI path entries contain no ':'")
        .to_string_lossy()
        .into_owned()
}
