//! The daemon's flags, as the reference's `dhcp daemon` takes them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::Timing;
use crate::config::DEFAULT_SOCKET_PATH;
use crate::DhcpError;

/// The daemon's flags, named and defaulted as the reference's.
///
/// Go: the flags of `dhcp daemon` (plugins `plugins/ipam/dhcp/main.go`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonOptions {
    /// `-socketpath`: where to listen (default `/run/cni/dhcp.sock`).
    pub socket_path: PathBuf,
    /// `-hostprefix`: prepended to the socket path and to every namespace
    /// path, for a daemon running in a container with the host's root
    /// mounted there.
    pub host_prefix: String,
    /// `-broadcast`: ask for broadcast replies when renewing too.
    pub broadcast: bool,
    /// `-timeout`, `-resendmax`, `-resendtimeout`.
    pub timing: Timing,
    /// `-pidfile`: an absolute path to write the daemon's pid to.
    pub pidfile: Option<PathBuf>,
}

impl Default for DaemonOptions {
    fn default() -> DaemonOptions {
        DaemonOptions {
            socket_path: PathBuf::from(DEFAULT_SOCKET_PATH),
            host_prefix: String::new(),
            broadcast: false,
            timing: Timing::default(),
            pidfile: None,
        }
    }
}

impl DaemonOptions {
    /// Reads the flags as Go's `flag` package does: `-name value`,
    /// `-name=value`, `--name`; booleans take no value unless written
    /// `-broadcast=false`; durations are Go's (`10s`, `1m30s`, `500ms`).
    /// An unknown flag or a bad value is [`DhcpError::Flag`] naming it.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<DaemonOptions, DhcpError> {
        let mut out = DaemonOptions::default();
        let mut args = args.into_iter();
        let bad = |flag: &str, why: String| DhcpError::Flag {
            flag: flag.to_string(),
            why,
        };
        while let Some(arg) = args.next() {
            let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                return Err(bad(&arg, "not a flag".into()));
            };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (flag, None),
            };
            if name == "broadcast" {
                out.broadcast = match inline.as_deref() {
                    None | Some("true" | "1" | "t" | "T" | "TRUE" | "True") => true,
                    Some("false" | "0" | "f" | "F" | "FALSE" | "False") => false,
                    Some(v) => return Err(bad(name, format!("{v:?} is not a boolean"))),
                };
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => args
                    .next()
                    .ok_or_else(|| bad(name, "needs a value".into()))?,
            };
            let duration = |v: &str| {
                parse_go_duration(v).ok_or_else(|| bad(name, format!("{v:?} is not a duration")))
            };
            match name {
                "socketpath" if !value.is_empty() => out.socket_path = PathBuf::from(value),
                "socketpath" => {}
                "hostprefix" => out.host_prefix = value,
                "pidfile" if value.is_empty() => out.pidfile = None,
                "pidfile" if !Path::new(&value).is_absolute() => {
                    return Err(bad(name, format!("{value:?} is not an absolute path")))
                }
                "pidfile" => out.pidfile = Some(PathBuf::from(value)),
                "timeout" => out.timing.timeout = duration(&value)?,
                "resendmax" => out.timing.resend_max = duration(&value)?,
                "resendtimeout" => out.timing.resend_timeout = duration(&value)?,
                _ => return Err(bad(name, "no such flag".into())),
            }
        }
        Ok(out)
    }

    /// The socket as the daemon opens it: the host prefix, then the path.
    pub fn listen_path(&self) -> PathBuf {
        PathBuf::from(format!(
            "{}{}",
            self.host_prefix,
            self.socket_path.display()
        ))
    }
}

/// A Go duration: a sequence of decimal numbers with units (`ns`, `us`,
/// `ms`, `s`, `m`, `h`), or `0`.
fn parse_go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<DaemonOptions, DhcpError> {
        DaemonOptions::from_args(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn the_daemon_takes_the_references_flags() {
        let o = args(&[
            "-socketpath",
            "/tmp/x.sock",
            "--hostprefix=/host",
            "-broadcast",
            "-timeout",
            "2s",
            "-resendmax=1m30s",
            "-resendtimeout",
            "500ms",
            "-pidfile",
            "/run/d.pid",
        ])
        .unwrap();
        assert_eq!(o.listen_path(), PathBuf::from("/host/tmp/x.sock"));
        assert!(o.broadcast);
        assert_eq!(o.timing.timeout, Duration::from_secs(2));
        assert_eq!(o.timing.resend_max, Duration::from_secs(90));
        assert_eq!(o.timing.resend_timeout, Duration::from_millis(500));
        assert_eq!(o.pidfile, Some(PathBuf::from("/run/d.pid")));
        assert_eq!(args(&[]).unwrap(), DaemonOptions::default());
    }

    #[test]
    fn a_bad_flag_is_refused_naming_it() {
        for (list, flag) in [
            (&["-timeout", "soon"][..], "timeout"),
            (&["-nosuch", "1"][..], "nosuch"),
            (&["-pidfile", "rel.pid"][..], "pidfile"),
            (&["-socketpath"][..], "socketpath"),
        ] {
            let err = args(list).unwrap_err().to_string();
            assert!(err.contains(flag), "{err}");
        }
    }
}
