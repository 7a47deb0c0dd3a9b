//! Shared support for the end-to-end tests of this workspace.
//!
//! The integration tests under `tests/tests/` exercise CNI plugins as real
//! processes, either directly ([`run_plugin`]) or through the reference Go
//! runtime library `libcni` ([`Driver`], which wraps the small Go program in
//! `tests/go/src/cnidriver`). Everything the tests need is built on demand,
//! once per test process:
//!
//! * our plugins: `cargo build -p plugins-sample --bins` ([`plugin_bin_dir`]);
//! * Go helpers from `tests/go/src/<name>` ([`go_binary`]);
//! * the reference `noop` test double from Debian's CNI source
//!   ([`reference_noop`]);
//! * the reference plugins shipped by Debian's `containernetworking-plugins`
//!   ([`reference_plugin_dir`]);
//! * our runtime's command line, `cnitool` (`cargo build -p cnitool
//!   --bin cnitool`, [`cnitool_bin`], driven by [`Cnitool`]).
//!
//! [`NetNs`] is a network namespace for tests that need a real one (root and
//! iproute2 required: they fail with a clear message otherwise).
//!
//! Missing prerequisites (Go, Debian's CNI library source, the reference
//! plugins) make the tests **fail** with a message pointing at
//! `scripts/install-test-deps.sh`; interop tests never skip silently.
//!
//! The kit by idea, each re-exported here so tests name it `tests::...`:
//! where the binaries come from (`binaries`: ours built with cargo, the
//! reference plugins; `go`: Go programs and the reference noop; `cnitool`:
//! our runtime's command line), running them (`process`: [`run_plugin`],
//! [`StdoutJson`]; `driver`: libcni through [`Driver`]), namespaces and
//! links (`netns`: [`NetNs`], [`ip`]), ports (`ports`: [`free_port`]), JSON (`json`: files, comparison,
//! normalisation) and where the tests run (`vm`: [`slowness`]). The public
//! modules hold what a few test files share: a peer started for the test
//! ([`etcd`], [`firewalld`], [`podman`]), the fuzz [`invariants`], and
//! more.

pub mod etcd;
pub mod firewalld;
pub mod invariants;
pub mod observe;
pub mod podman;
pub mod podman_drivers;
pub mod sandbox;
pub mod side_by_side;
pub mod stand_in;

mod binaries;
mod cnitool;
mod driver;
mod go;
mod json;
mod netns;
mod ports;
mod process;
mod runtime_knobs;
mod vm;

pub use binaries::{
    ours_with_reference_host_local, plugin_bin_dir, reference_plugin_dir, target_dir,
    try_plugin_bin_dir, workspace_root, INSTALL_HINT, PLUGIN_DIR_ENV, REFERENCE_PLUGIN_DIR,
};
pub use cnitool::{cnitool_bin, try_cnitool_bin, Cnitool};
pub use driver::Driver;
pub use go::{
    go_binary, reference_noop, DEBIAN_GOPATH, LIBCNI_IMPORT_PATH, REFERENCE_NOOP_IMPORT_PATH,
};
pub use json::{
    assert_same_steps, base64_decode, files_below, fill_ip_versions, first_difference, read_json,
    redact_netplugin_stderr, write_json,
};
pub use netns::{
    delete_host_link, global_addrs, host_link, in_host_namespace, ip, link_is_up,
    require_root_and_ip, NetNs,
};
pub use ports::free_port;
pub use process::{
    become_user, output_of, run_plugin, run_plugin_in_netns, RawOutput, StdoutJson, FAKE_NETNS,
};
pub use vm::{slowness, under_emulation, versions, VM_BACKEND_ENV};
