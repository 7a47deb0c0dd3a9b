//! How much of a plugin's output a runtime keeps: what both the reader
//! of its pipes (`deadline`) and the raw output (`raw`) are bounded by.

/// How much of a plugin's standard output is kept: 1 MiB. A result is a
/// few hundred bytes per interface, address and route, so a real one (even
/// with thousands of routes) fits many times over; the rest of the output
/// is read, so the plugin is never blocked, and only counted
/// ([`RawOutput::stdout_dropped`](crate::RawOutput::stdout_dropped)).
pub const STDOUT_LIMIT: usize = 1 << 20;

/// How much of a plugin's standard error is kept: 64 KiB, the first lines
/// of its log, where a failure's cause is. The rest is counted
/// ([`RawOutput::stderr_dropped`](crate::RawOutput::stderr_dropped)).
pub const STDERR_LIMIT: usize = 64 << 10;
