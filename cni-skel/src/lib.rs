//! The entry point of a CNI plugin.
//!
//! A runtime executes a plugin with the command and attachment parameters in
//! `CNI_*` environment variables and the network configuration as JSON on
//! stdin; the plugin answers with a JSON result or error on stdout and an
//! exit status. This crate does all of that around a [`Plugin`] you write:
//!
//! env + stdin → checks → [`Request`] → your method → [`Reply`] →
//! conversion to the configuration's `cniVersion` → stdout.
//!
//! A complete plugin:
//!
//! ```no_run
//! use cni_skel::{BoxError, Plugin, Reply, Request};
//! use cni_types::{Interface, NetConf, Result100, SpecVersion};
//!
//! #[derive(serde::Deserialize)]
//! struct Config {
//!     #[serde(default)]
//!     greeting: String,
//! }
//!
//! struct Hello;
//!
//! impl Plugin for Hello {
//!     type Config = NetConf<Config>;
//!     // Required: what CHECK verifies. Hello keeps nothing to verify, so the
//!     // SDK answers CHECK with an error asking for `disableCheck`.
//!     const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Unsupported;
//!
//!     fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
//!         req.log(format_args!("{} from {}", req.config.plugin.greeting, req.container_id));
//!         let mut result = Result100::new(SpecVersion::V1_1_0);
//!         result.interfaces.push(Interface::named(req.ifname.clone()));
//!         Ok(result.into()) // printed in the configuration's cniVersion
//!     }
//!
//!     fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
//!         Ok(())
//!     }
//! }
//!
//! fn main() {
//!     cni_skel::run(&Hello, &cni_version::PluginInfo::all(), "CNI hello plugin v1.0.0");
//! }
//! ```
//!
//! Shipped binaries should use [`plugin_main!`] instead of `fn main`: the
//! same run with a lean process start-up (`#![no_main]`), ~15% faster per
//! execution. Build them as `scripts/build-static-plugins.sh` does (static
//! on musl, non-PIE, the `plugin` profile) for the rest; `BENCHMARKS.md` has
//! the figures and what musl changes for a plugin.
//!
//! The process ends in [`exit`], which the entry point calls: it flushes
//! stdout and leaves the closes a library handed to [`close_after_exit`]
//! (a netfilter socket after rule deletions, whose release waits for the
//! kernel) to a detached child, so the runtime is not kept waiting for
//! kernel bookkeeping after the answer.
//!
//! The runtime's trace context (`TRACEPARENT`, `TRACESTATE`, `BAGGAGE`, as
//! the reference's `invoke` sets them) is on [`Request::trace`] as a
//! [`TraceContext`]; `cni-invoke` passes it on to delegates.
//!
//! Test a plugin in-process with [`TestRequest`]: it builds the environment
//! and stdin by hand and runs exactly the path a real invocation takes.
//! [`TestRequest::add`], [`del`](TestRequest::del),
//! [`check`](TestRequest::check), [`gc`](TestRequest::gc) and
//! [`status`](TestRequest::status) set the variables each command requires.
//!
//! With the `async` feature, a plugin whose methods are `async`
//! (`AsyncPlugin`) is served by the same dispatcher through
//! `Blocking`, which blocks on each method's future; no runtime is
//! needed, and a sync plugin's binary and start-up do not change.
//!
//! # What is checked before your method runs
//! Exactly what the reference skel (Go `pkg/skel`, spec 1.1.0) checks, in
//! its order, with its error codes:
//! - `CNI_COMMAND` always; `CNI_CONTAINERID` and `CNI_IFNAME` for ADD, DEL
//!   and CHECK; `CNI_NETNS` for ADD and CHECK; `CNI_PATH` for GC. An empty
//!   value is missing; all missing variables are named in one error (code
//!   4). A present container id or interface name is validated only when
//!   the command requires it (code 4, naming the variable and value).
//! - No `CNI_COMMAND` and an about string: the about string and supported
//!   versions go to stderr and the status is 0.
//! - stdin must be JSON (code 6) with a valid `name` (code 7); an unknown
//!   `CNI_COMMAND` is code 4 after that.
//! - The configuration's `cniVersion` (0.1.0 when absent; code 6 when not a
//!   string) must be one the plugin supports, by exact string (code 1).
//!   CHECK needs 0.4.0 or later, GC and STATUS 1.1.0 or later (code 1).
//! - CHECK of a plugin whose [`Plugin::CHECK`] is
//!   [`CheckSupport::Unsupported`] is code 4 naming `CNI_COMMAND`, after
//!   the checks above; Go's skel has no such case, as it requires every
//!   plugin to give a `cmdCheck`.
//! - ADD and DEL refuse a `CNI_NETNS` that is the plugin's own network
//!   namespace (code 8), unless `CNI_NETNS_OVERRIDE` is `1` or `true`.
//!
//! Errors from your method keep their code when they are
//! [`cni_types::Error`]s; anything else is code 999 with its message and
//! cause chain. A panic is caught and reported as code 999.
//!
//! # Where we deliberately differ from the reference skel
//! Everywhere else a runtime or test can observe, we match it. The first
//! six points contradict the spec or the reference's own users' bug
//! reports; the seventh is a cost the reference makes the node pay:
//! 1. **The netns check runs before your method**, so a rejected call prints
//!    one error and nothing else; the reference runs it after ADD/DEL and
//!    can print a result followed by an error.
//! 2. **VERSION answers in the requested version**: its `cniVersion` is the
//!    one stdin names when the plugin supports it (the spec), else the
//!    newest supported; the reference always answers its own `1.1.0`.
//! 3. **Error JSON carries `cniVersion`**, the configuration's when known,
//!    else the newest supported, as the spec's error example shows.
//! 4. **`CNI_PATH` is optional for ADD, DEL, CHECK and STATUS** and
//!    required for GC, as the spec lists; the reference requires it for
//!    all five. A plugin that delegates and finds it missing reports code 4
//!    naming `CNI_PATH`.
//! 5. **A `prevResult` of another version family is accepted and
//!    converted** to the configuration's version; the reference rejects it.
//! 6. **GC without `cni.dev/valid-attachments` is not GC of everything**:
//!    [`Request::valid_attachments`] tells an absent key
//!    ([`cni_types::ValidAttachments::Unspecified`], keep everything) from
//!    `null` and `[]` (the empty list, release everything: libcni marshals
//!    an empty Go slice as `null`); the reference reads all three as an
//!    empty list.
//! 7. **A deleting plugin's netfilter socket is closed by a detached
//!    child** ([`close_after_exit`]), which outlives the plugin by up to
//!    2 s, until the ruleset has not changed for 50 ms: that close holds
//!    the namespace's nf_tables commit mutex for an RCU grace period, and
//!    in a burst of DELs those closes, one per deleting plugin, were what
//!    every pod's DEL waited for, one after another (BENCHMARKS.md,
//!    "Many pods at once"). The reference's `iptables` processes each
//!    pay it before they exit.
//!
//! Point 3, like the empty `dns` that results omit (`cni-types`), is only a
//! matter of bytes: a plugin that must print exactly what the reference
//! prints sets [`Plugin::WIRE_FORMAT`] to
//! [`WireFormat::Reference`](cni_types::WireFormat), as the sample `noop`
//! does to pass the reference noop's own test suite.

#[cfg(feature = "async")]
mod async_plugin;
mod command;
mod dispatch;
mod env;
mod flock_wait;
mod harness;
mod late_close;
pub mod log;
mod netns;
mod plugin;
mod process;
mod request;
mod trace;
mod undo;

#[cfg(feature = "async")]
pub use async_plugin::{AsyncPlugin, Blocking, Executor, ParkThread};
pub use command::Command;
pub use dispatch::{dispatch, sanitize_utf8};
pub use env::{Env, ProcessEnv};
pub use flock_wait::{flock_holder, flock_within, FlockWait};
pub use harness::{Outcome, TestRequest};
pub use late_close::{close_after_exit, exit};
pub use plugin::{BoxError, CheckSupport, FromConfig, Plugin, Reply};
pub use process::{lean_start, read_stdin, run, try_run};
pub use request::Request;
pub use trace::{TraceContext, TraceParent, TRACE_VARS};
pub use undo::{Teardown, Undo};

/// The `dlmalloc` feature's allocator, for [`plugin_main!`].
#[cfg(feature = "dlmalloc")]
#[doc(hidden)]
pub use dlmalloc as __dlmalloc;
