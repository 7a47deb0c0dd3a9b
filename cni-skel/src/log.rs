//! Logging for plugins: never to stdout, which carries the one result.
//!
//! [`Request::log`](crate::Request::log) writes a line to stderr, which
//! runtimes collect. For a plugin that lets its configuration name a log
//! file (a `logFile` key, say), [`append_line`] appends to it instead.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Appends `message` as one line to the file at `path` (created, mode 0600,
/// when missing), prefixed with the Unix time and the process id so lines
/// of concurrent plugin runs can be told apart. One `write` call per line,
/// so concurrent appenders do not interleave within a line.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("cni-log-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// cni_skel::log::append_line(&dir.join("plugin.log"), "allocated 10.0.0.2").unwrap();
/// let text = std::fs::read_to_string(dir.join("plugin.log")).unwrap();
/// assert!(text.ends_with(" allocated 10.0.0.2\n"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn append_line(path: &Path, message: impl fmt::Display) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let line = format!(
        "{}.{:03} [{}] {message}\n",
        now.as_secs(),
        now.subsec_millis(),
        std::process::id()
    );
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?
        .write_all(line.as_bytes())
}
