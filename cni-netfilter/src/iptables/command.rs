//! Running an iptables command: its input written, its output read up to
//! a bound, its failure reported with the start of its stderr.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use crate::FilterError;

/// The most of a failed command's stderr an error carries.
pub const STDERR_LIMIT: usize = 4096;

/// Runs `program args`, feeding it `stdin`, and returns its stdout, of at
/// most `stdout_limit` bytes; a larger output ends the command and is an
/// error. A nonzero exit is [`FilterError::Command`] with the first
/// [`STDERR_LIMIT`] bytes of stderr.
pub(crate) fn run(
    program: &str,
    args: &[&str],
    stdin: Option<&[u8]>,
    stdout_limit: usize,
) -> Result<Vec<u8>, FilterError> {
    Started::spawn(program, args, stdin.is_some())?.finish(stdin, stdout_limit)
}

/// A command started before its input is known, so its start (an
/// `iptables-restore` loads its libraries: about a millisecond) overlaps
/// the work that makes the input. Dropped unfinished, its input is closed
/// empty and it is waited for: an `iptables-restore` given nothing changes
/// nothing.
pub(crate) struct Started {
    command: String,
    child: std::process::Child,
}

impl Started {
    /// Starts `program args`, its input a pipe when `piped`, else empty.
    pub(crate) fn spawn(program: &str, args: &[&str], piped: bool) -> Result<Started, FilterError> {
        let command = std::iter::once(program)
            .chain(args.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        let child = Command::new(program)
            .args(args)
            .stdin(if piped { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| FilterError::Spawn {
                command: command.clone(),
                source,
            })?;
        Ok(Started { command, child })
    }

    /// Feeds the command `stdin` and waits for it, as [`run`] does.
    pub(crate) fn finish(
        mut self,
        stdin: Option<&[u8]>,
        stdout_limit: usize,
    ) -> Result<Vec<u8>, FilterError> {
        let command = std::mem::take(&mut self.command);
        let spawn_error = |source| FilterError::Spawn {
            command: command.clone(),
            source,
        };
        let child = &mut self.child;
        let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
        let input = child.stdin.take();
        let (stdout, stderr, written) = std::thread::scope(|scope| {
            // Each pipe has its own thread, so a command that fills one while
            // we wait on another cannot deadlock.
            let writer = scope.spawn(move || match (input, stdin) {
                (Some(mut pipe), Some(bytes)) => pipe.write_all(bytes),
                _ => Ok(()),
            });
            let stderr = scope.spawn(move || read_capped(err.as_mut(), STDERR_LIMIT, true));
            let stdout = read_capped(out.as_mut(), stdout_limit, false);
            if stdout.1 {
                // Past the bound: end the command rather than read on.
                let _ = child.kill();
            }
            let written = writer.join().unwrap_or(Ok(()));
            (stdout, stderr.join().unwrap_or_default(), written)
        });
        let (stdout, overflow) = stdout;
        let status = child.wait().map_err(spawn_error)?;
        if overflow {
            return Err(FilterError::Malformed {
                peer: "iptables",
                reason: format!("{command} printed more than {stdout_limit} bytes"),
            });
        }
        if !status.success() {
            let mut stderr = String::from_utf8_lossy(&stderr.0).trim_end().to_string();
            if stderr.is_empty() {
                stderr = "(no output on stderr)".into();
            }
            let status = match status.code() {
                Some(code) => format!("exit status {code}"),
                None => format!("{status}"),
            };
            if stderr.contains("holding the xtables lock") {
                // iptables-legacy's own host-wide lock, past `-w`'s wait.
                return Err(FilterError::Busy {
                    what: format!("{command}: {}", stderr.trim()),
                });
            }
            return Err(FilterError::Command {
                command,
                status,
                stderr,
            });
        }
        written.map_err(spawn_error)?;
        Ok(stdout)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        // Not finished: its input closes here, empty; reap it.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Reads up to `limit` bytes; the flag says more followed. With `drain`,
/// what follows is read and dropped, so the command never blocks on a
/// full pipe; without, reading stops there.
fn read_capped(pipe: Option<&mut impl Read>, limit: usize, drain: bool) -> (Vec<u8>, bool) {
    let Some(pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut bytes = Vec::new();
    let _ = pipe.by_ref().take(limit as u64).read_to_end(&mut bytes);
    let more = if drain {
        std::io::copy(pipe, &mut std::io::sink()).unwrap_or(0) > 0
    } else {
        pipe.read(&mut [0]).unwrap_or(0) > 0
    };
    (bytes, more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_command_reports_its_status_and_the_start_of_its_stderr() {
        let script = "head -c 10000 /dev/zero | tr '\\0' x >&2; exit 3";
        let err = run("sh", &["-c", script], None, 100).unwrap_err();
        let FilterError::Command { status, stderr, .. } = err else {
            panic!("{err:?}");
        };
        assert_eq!(status, "exit status 3");
        assert_eq!(stderr.len(), STDERR_LIMIT);
    }

    #[test]
    fn a_command_started_early_gets_its_input_later_or_none_when_dropped() {
        let out = std::env::temp_dir().join(format!("cni-rs-started-{}", std::process::id()));
        let script = format!("cat > {}", out.display());
        let started = Started::spawn("sh", &["-c", &script], true).unwrap();
        started.finish(Some(b"*nat\nCOMMIT\n"), 100).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "*nat\nCOMMIT\n");
        // Dropped unfinished: its input closes empty and it is waited for,
        // so it has run to its end when the drop returns.
        drop(Started::spawn("sh", &["-c", &script], true).unwrap());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
        let _ = std::fs::remove_file(&out);
    }

    #[test]
    fn output_past_the_bound_is_an_error_not_memory() {
        let err = run("sh", &["-c", "head -c 5000 /dev/zero"], None, 4096).unwrap_err();
        assert!(err.to_string().contains("more than 4096 bytes"), "{err}");
        let out = run("cat", &[], Some(b"restore me"), 4096).unwrap();
        assert_eq!(out, b"restore me");
    }

    #[test]
    fn a_missing_program_names_the_command() {
        let err = run("/nonexistent/iptables-save", &["-t", "nat"], None, 10).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to run /nonexistent/iptables-save -t nat"
        );
        assert_eq!(err.errno(), Some(2));
    }
}
