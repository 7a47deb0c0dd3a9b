//! A drop-in replacement for the reference noop test double
//! (`plugins/test/noop` of the reference repository, spec 1.1.0).
//!
//! Runtime test suites drive it through a debug file named by `CNI_ARGS`
//! key `DEBUG` or, failing that, the config key `debugFile`:
//! - `ReportResult` is printed verbatim, except `PASSTHROUGH` (print
//!   `prevResult` in the configuration's version) and `INJECT-DNS` (the same,
//!   with nameservers set to `["1.2.3.4"]`);
//! - `ReportError` fails with that message and `ReportErrorCode` (999 when
//!   0); `ReportStderr` goes to stderr; `ExitWithCode` > 0 is the exit
//!   status after printing; `ReportVersionSupport` replaces the supported
//!   versions;
//! - the plugin writes the command and its arguments back into the file,
//!   and appends them to the config's `commandLog` file when named.
//!
//! It prints in the reference's wire format
//! ([`WireFormat::Reference`](cni_types::WireFormat)): errors without
//! `cniVersion`, 0.x results with `"dns": {}`, so the reference noop's own
//! test suite passes against it (`tests/tests/reference_noop_suite.rs`).
//!
//! With no debug file it prints `{}` and succeeds. Where the reference
//! aborts with a Go panic ("test setup error", exit status 2), this plugin
//! exits 2 as well, with one line on stderr instead of a stack trace.

pub mod debug;

use std::borrow::Cow;
use std::path::Path;

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{CniArgs, CniResult, Code, Error, NetConf, SpecVersion, WireFormat};
use cni_version::PluginInfo;
use serde::Deserialize;

use self::debug::{append_command_log, CmdArgs, CmdLogEntry, Debug};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI noop plugin v0.7.0";

/// The reference's default list, with its deliberately invalid first entry
/// (runtime test suites look for it).
pub const DEFAULT_VERSIONS: [&str; 8] = [
    "0.-42.0", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// The reference's bytes: errors without `cniVersion`, `"dns": {}` in 0.x
/// results, as runtime test suites written against the reference noop
/// expect (its own suite among them).
const WIRE_FORMAT: WireFormat = WireFormat::Reference;

/// Exit status of a test setup error, as a Go panic exits.
pub const SETUP_ERROR_STATUS: i32 = 2;

/// The noop's own configuration keys.
#[derive(Debug, Default, Deserialize)]
struct NoopFields {
    #[serde(rename = "debugFile", default)]
    debug_file: Option<String>,
    #[serde(rename = "commandLog", default)]
    command_log: Option<String>,
}

/// The noop plugin, for one invocation.
///
/// The reference noop prints on every command (`{}` with no debug file,
/// `ReportResult` otherwise), where the SDK gives only ADD something to
/// print. So the other commands leave what they print here, and
/// [`main_with`], the noop's own entry point, prints it after the SDK's
/// dispatcher has run: the one sample that needs raw output keeps it out
/// of `cni_skel`.
#[derive(Debug, Default)]
pub struct Noop {
    printed: std::cell::RefCell<Option<Printed>>,
}

/// What the noop prints and the status it exits with.
#[derive(Debug)]
struct Printed {
    stdout: Vec<u8>,
    exit_code: i32,
}

/// A failure the reference reports by panicking: the caller exits 2 with
/// this one-line reason on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError(pub String);

/// The versions the plugin supports for this invocation: the defaults, or
/// the debug file's `ReportVersionSupport` when `CNI_ARGS` is set (the
/// reference reads the debug file only then).
pub fn supported_versions(stdin: &[u8], cni_args: &str) -> Result<PluginInfo, SetupError> {
    if cni_args.is_empty() {
        return Ok(PluginInfo::new(DEFAULT_VERSIONS));
    }
    let (path, _) = load_config(stdin, cni_args)
        .map_err(|e| SetupError(format!("unable to get debug file path: {e}")))?;
    let debug = Debug::read(Path::new(&path))
        .map_err(|e| SetupError(format!("unable to read debug file: {e}")))?;
    match debug.report_version_support {
        None => Ok(PluginInfo::new(DEFAULT_VERSIONS)),
        Some(v) if v.is_empty() => Err(SetupError("ReportVersionSupport lists no version".into())),
        Some(v) => Ok(PluginInfo::new(v)),
    }
}

/// Why the configuration or `CNI_ARGS` cannot say what the noop is to
/// do, in the reference noop's words.
#[derive(Debug, Clone, thiserror::Error)]
enum ConfigFailure {
    /// The configuration does not parse.
    #[error("failed to load netconf: {0}")]
    Netconf(std::sync::Arc<cni_types::ConfigError>),
    /// `CNI_ARGS` is not `K=V;K=V`.
    #[error("CNI_ARGS invalid key/value pair: {0}")]
    CniArgs(cni_types::CniArgsError),
}

/// The configuration and the debug file path (`CNI_ARGS` `DEBUG` wins over
/// the config's `debugFile`; empty when neither is set).
fn load_config(
    stdin: &[u8],
    cni_args: &str,
) -> Result<(String, NetConf<NoopFields>), ConfigFailure> {
    let sanitized = cni_skel::sanitize_utf8(stdin);
    let conf = parse_config(sanitized.as_deref().unwrap_or(stdin))?;
    let path = debug_path(&conf, cni_args)?;
    Ok((path, conf))
}

/// The configuration as the reference noop reads it (its failure is the
/// plugin's error, code 999, not the SDK's).
fn parse_config(json: &[u8]) -> Result<NetConf<NoopFields>, ConfigFailure> {
    NetConf::from_json(json).map_err(|e| ConfigFailure::Netconf(e.into()))
}

/// `CNI_ARGS` `DEBUG`, else the config's `debugFile`; empty when neither.
fn debug_path(conf: &NetConf<NoopFields>, cni_args: &str) -> Result<String, ConfigFailure> {
    let args = CniArgs::parse(cni_args).map_err(ConfigFailure::CniArgs)?;
    Ok(match args.get("DEBUG") {
        Some(p) => p.to_owned(),
        None => conf.plugin.debug_file.clone().unwrap_or_default(),
    })
}

/// The noop's configuration, parsed once by the SDK (from stdin made
/// readable as the reference reads it); a failure is kept and reported by
/// the command as the reference noop reports it, not as an SDK error.
#[derive(Debug)]
pub struct NoopConfig(Result<NetConf<NoopFields>, ConfigFailure>);

impl cni_skel::FromConfig for NoopConfig {
    fn from_config(stdin: &[u8]) -> Result<Self, Error> {
        Ok(NoopConfig(parse_config(stdin)))
    }
}

impl Noop {
    fn behave(&self, req: &Request<NoopConfig>) -> Result<Printed, BoxError> {
        let command = req.command.as_str();
        let conf = req.config.0.as_ref().map_err(|e| e.clone())?;
        let path = debug_path(conf, &req.args)?;
        if path.is_empty() {
            req.write_stderr(b"CNI_ARGS or config empty, no debug behavior\n");
            return Ok(Printed {
                stdout: b"{}".to_vec(),
                exit_code: 0,
            });
        }
        let path = Path::new(&path);
        let mut debug = Debug::read(path)?;
        debug.command = command.to_owned();
        debug.cmd_args = CmdArgs {
            container_id: req.container_id.clone(),
            netns: req
                .netns
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ifname: req.ifname.clone(),
            args: req.args.clone(),
            path: req.raw_path.clone(),
            netns_override: req.netns_override.clone(),
            stdin_data: &req.stdin,
        };
        debug.write(path)?;
        if let Some(log) = conf.plugin.command_log.as_deref().filter(|l| !l.is_empty()) {
            let cmd_args = serde_json::to_value(&debug.cmd_args)?;
            append_command_log(
                Path::new(log),
                CmdLogEntry {
                    command: command.to_owned(),
                    cmd_args,
                },
            )?;
        }
        if !debug.report_stderr.is_empty() {
            req.write_stderr(debug.report_stderr.as_bytes());
        }
        if !debug.report_error.is_empty() {
            let code = if debug.report_error_code == 0 {
                Code::INTERNAL
            } else {
                Code(debug.report_error_code)
            };
            return Err(Error::new(code, debug.report_error).into());
        }
        let stdout = match debug.report_result.as_str() {
            mode @ ("PASSTHROUGH" | "INJECT-DNS") => {
                let Some(prev) = conf.prev_result.as_ref() else {
                    req.log(format_args!("test setup error: {mode} needs a prevResult and the {command} configuration has none"));
                    return Ok(Printed {
                        stdout: Vec::new(),
                        exit_code: SETUP_ERROR_STATUS,
                    });
                };
                let prev = if mode == "INJECT-DNS" {
                    let mut current = prev.to_current()?;
                    current.dns.nameservers = vec!["1.2.3.4".to_owned()];
                    Cow::Owned(CniResult::from(current))
                } else {
                    Cow::Borrowed(prev)
                };
                let failed = |e: &dyn std::fmt::Display| {
                    format!(
                        "failed to convert result to config {:?}: {e}",
                        conf.version()
                    )
                };
                let version = SpecVersion::parse(conf.version()).map_err(|e| failed(&e))?;
                // Compact, as the reference noop's json.Marshal prints it.
                let printed = |r: &CniResult| serde_json::to_vec(&r.in_format(WIRE_FORMAT));
                if *prev.version() == version {
                    // Already in the configuration's version (as the SDK
                    // reads prevResult): printed as it is, not copied.
                    printed(&prev)?
                } else {
                    let converted = prev.into_owned().into_version(&version);
                    printed(&converted.map_err(|e| failed(&e))?)?
                }
            }
            verbatim => verbatim.as_bytes().to_vec(),
        };
        let exit_code = if debug.exit_with_code > 0 {
            i32::try_from(debug.exit_with_code).unwrap_or(i32::MAX)
        } else {
            0
        };
        Ok(Printed { stdout, exit_code })
    }

    /// Keeps what a command other than ADD prints, for [`main_with`].
    fn behave_later(&self, req: &Request<NoopConfig>) -> Result<(), BoxError> {
        let printed = self.behave(req)?;
        *self.printed.borrow_mut() = Some(printed);
        Ok(())
    }
}

impl Plugin for Noop {
    /// Parsed without failing, so that a malformed configuration fails the
    /// way the reference noop's does (code 999 from the command).
    type Config = NoopConfig;
    const CHECK: CheckSupport = CheckSupport::Full;

    /// A drop-in for the reference test double prints what it prints.
    const WIRE_FORMAT: WireFormat = WIRE_FORMAT;

    fn add(&self, req: &Request<NoopConfig>) -> Result<Reply, BoxError> {
        let Printed { stdout, exit_code } = self.behave(req)?;
        Ok(Reply::Raw { stdout, exit_code })
    }
    fn del(&self, req: &Request<NoopConfig>) -> Result<(), BoxError> {
        self.behave_later(req)
    }
    fn check(&self, req: &Request<NoopConfig>) -> Result<(), BoxError> {
        self.behave_later(req)
    }
    fn gc(&self, req: &Request<NoopConfig>) -> Result<(), BoxError> {
        self.behave_later(req)
    }
    fn status(&self, req: &Request<NoopConfig>) -> Result<(), BoxError> {
        self.behave_later(req)
    }
}

/// Runs the noop for one invocation with the given environment and stdin:
/// the whole binary, minus the process.
pub fn main_with(
    env: &dyn cni_skel::Env,
    stdin: &[u8],
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
) -> i32 {
    let cni_args = env
        .var("CNI_ARGS")
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    match supported_versions(stdin, &cni_args) {
        Ok(versions) => {
            let noop = Noop::default();
            let status = cni_skel::dispatch(
                &noop,
                &versions,
                ABOUT,
                env,
                &mut &stdin[..],
                stdout,
                stderr,
            );
            match noop.printed.into_inner() {
                Some(Printed {
                    stdout: bytes,
                    exit_code,
                }) if status == 0 => match stdout.write_all(&bytes).and_then(|()| stdout.flush()) {
                    Ok(()) => exit_code,
                    Err(e) => {
                        let _ = writeln!(stderr, "error writing the result to stdout: {e}");
                        1
                    }
                },
                _ => status,
            }
        }
        Err(SetupError(reason)) => {
            let _ = writeln!(stderr, "test setup error: {reason}");
            SETUP_ERROR_STATUS
        }
    }
}
