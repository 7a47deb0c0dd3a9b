//! End-to-end interoperability tests through the reference runtime library
//! (`libcni`, driven by the `cnidriver` Go program).
//!
//! Every scenario is *differential*: it runs once with the reference `noop`
//! test double (built from Debian's Go source) and once with ours (the
//! `noop` binary of `plugins-sample`), in the same sandbox layout so that
//! every path the plugins see is identical, and the two observations
//! (libcni's reports, plugin stderr libcni forwarded, the debug files the
//! plugins rewrote byte for byte, libcni's cache file, direct runs' exit
//! status, stdout byte for byte and stderr, ...) must be equal once ours has
//! been normalised for the documented differences between the two (see
//! [`differences`]: one function per difference, applied
//! only where it shows). The assertions in each test then pin down the
//! reference behaviour itself, so a change in the reference would be
//! noticed too.
//!
//! Sandbox layout (one temporary directory per test, wiped between the two
//! runs; [`sandbox`]):
//!
//! ```text
//! <tmp>/bin/noop        -> the noop under test (symlink)
//! <tmp>/bin/host-local  -> /usr/lib/cni/host-local (symlink)
//! <tmp>/cache/          libcni cache dir
//! <tmp>/ipam/           host-local dataDir
//! <tmp>/*.json          debug files and conflists
//! ```
//!
//! The machinery: [`sandbox`] (the layout and what can be read from it),
//! [`differential`] (running a scenario against both noops and comparing),
//! [`differences`] (the documented differences, one function each),
//! [`fixtures`] (versions and results the scenarios share). The scenarios,
//! one module per kind: [`chain_passthrough`], [`host_local_chain`],
//! [`version`], [`errors`], [`inject_dns`], [`recorded_args`],
//! [`no_debug_file`], [`direct_runs`].

mod differences;
mod differential;
mod fixtures;
mod sandbox;

mod chain_passthrough;
mod direct_runs;
mod errors;
mod host_local_chain;
mod inject_dns;
mod no_debug_file;
mod recorded_args;
mod version;
