//! A conformance checker for CNI plugins: runs any plugin binary, in any
//! language, through the spec's contract and reports every rule it breaks,
//! quoting the spec and showing what the plugin printed.
//!
//! - [`Target`]: the plugin, its [`Kind`], configuration, versions and
//!   namespace; [`run`] with a [`Selection`] gives a [`Report`] (text
//!   table, JSON, JUnit).
//! - [`Case`]: one rule, with its id, spec section, quoted sentence and
//!   [`Level`] (MUST is a failure, SHOULD a warning); [`cases::all`] is the
//!   table, one file per spec section under `cases/`.
//! - [`Session`]: one run's namespace, data directory and configurations,
//!   every call made ([`Call`], kept for the output checks) and the
//!   scenarios, each run once for the cases that read it.
//! - The plugin is executed with [`cni_invoke::exec_raw`], which keeps its
//!   exit status, stdout and stderr byte for byte (up to its limits),
//!   under a deadline, in a working directory of the run's own (a fresh
//!   temporary directory), optionally in a mount namespace of its own
//!   ([`Target::private_mounts`]).
//! - A run stops early when its [`Target::cancel`] switch is thrown (the
//!   command line throws it on `SIGINT`, `SIGTERM` and `SIGHUP`) or after
//!   [`MAX_TIMEOUTS`] timed-out executions: the plugins running are
//!   stopped, the checks left are reported as not run, and the run's
//!   namespaces and directories are removed.
//!
//! The modules are layered, each using only those before it: the target,
//! the runner (executing the plugin, the calls), the scenarios' data, the
//! session, the cases, the run and its report.
//!
//! A plugin crate can assert its own conformance in `cargo test` (root is
//! needed for the temporary namespace):
//!
//! ```no_run
//! use cni_conformance::{run, Kind, Selection, Target};
//!
//! let target = Target::new(env!("CARGO_MANIFEST_DIR").to_owned() + "/../target/debug/dns-mac", Kind::Chained);
//! let report = run(&target, &Selection::all())?;
//! assert_eq!(report.failed(), 0, "{}", report.text());
//! # Ok::<(), cni_conformance::SetupError>(())
//! ```
//!
//! The reference project has no such tool (its issue "CNI Conformance
//! Tests" has been open since 2018); the closest Go helpers are the
//! plugins' `testutils` and each plugin's own Ginkgo suite.
//!
//! Where we deliberately differ from a literal reading of the spec:
//! - `VERSION` echoing the input's `cniVersion`, and answering without
//!   stdin, are warnings, not failures: runtimes ignore the echoed value,
//!   and the reference skel answers its newest version whatever it is
//!   asked.
//! - A result printed by DEL, CHECK or GC is a warning: the spec defines
//!   no output for them and runtimes ignore it.
//! - Concurrent ADDs with overlapping addresses are a failure for IPAM
//!   plugins only; loopback addresses never count as overlapping.
//! - GC handing a kept attachment's address to a new ADD is judged only
//!   for an address the kept attachment held alone: a plugin that gives
//!   every attachment the same address (a fixed result) says nothing
//!   about its GC.
//! - A missing `CNI_COMMAND` answered with exit 0 is a warning: the
//!   reference skel (and ours) treats it as a person running the binary.
//! - "An interface of the requested name already exists: MUST error" is
//!   judged only for plugins whose ADD creates `CNI_IFNAME`; one that
//!   adjusts an existing interface (loopback and `lo`) is not bound by it.
//! - By default chained plugins are exercised from 0.3.0 (chaining starts
//!   there), and interface plugins with the minimal configuration only in
//!   the versions their IPAM plugin supports too, so a delegate's limits
//!   are not blamed on the plugin.

#![warn(missing_docs)]

mod call;
mod case;
pub mod cases;
mod config;
mod error;
mod netns;
mod report;
mod run;
mod runner;
mod scenarios;
mod session;
mod target;

pub use call::{Call, ErrorObject};
pub use case::{Case, Finding, Level, Verdict};
pub use cni_invoke::{Cancel, Exit, RawOutput};
pub use cni_net::testing::TempNetns;
pub use config::{interface_result, TEST_SUBNET};
pub use error::{SetupError, UnknownCase};
pub use netns::NetnsError;
pub use report::{Outcome, Report, Status};
pub use run::{run, Selection};
pub use runner::MAX_TIMEOUTS;
pub use scenarios::{ConcurrentAdds, EnvProbes, GcOutcome, Lifecycle, Links, VersionProbes};
pub use session::Session;
pub use target::{Kind, NetnsChoice, Target};
