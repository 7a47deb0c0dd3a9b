//! The one path every invocation takes:
//! env + stdin -> checks -> parsed request -> plugin method -> reply ->
//! conversion to the configuration's version -> stdout.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use cni_types::validate::validate_network_name;
use cni_types::{Code, Error, SpecVersion};
use cni_version::{peek_fields, LooseVersion, PluginInfo};

use crate::env::CniEnv;
use crate::netns::reject_own_netns;
use crate::request::{split_path, Stderr, StderrSink};
use crate::{
    BoxError, CheckSupport, Command, Env, FromConfig, Plugin, Reply, Request, TraceContext,
};

/// Runs one invocation of `plugin` with the given environment and standard
/// streams, and returns the process exit status. Never panics and never
/// exits: the caller decides what to do with the status (see
/// [`run`](crate::run) for the process entry point and
/// [`TestRequest`](crate::TestRequest) for tests).
///
/// On failure exactly one CNI error JSON is written to `stdout` and the
/// status is 1.
///
/// Go: `skel.PluginMainFuncsWithError`'s dispatcher (`pluginMain`), with the environment and streams as values.
pub fn dispatch<P: Plugin>(
    plugin: &P,
    versions: &PluginInfo,
    about: &str,
    env: &dyn Env,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> i32 {
    let mut version_for_errors = None;
    let stderr = StderrSink::new(stderr);
    let outcome = run_command(
        plugin,
        versions,
        about,
        env,
        stdin,
        &stderr,
        &mut version_for_errors,
    );
    let stderr = stderr.into_inner();
    match outcome {
        Ok(Output::Nothing) => 0,
        Ok(Output::Stdout(bytes, code)) => {
            match stdout.write_all(&bytes).and_then(|()| stdout.flush()) {
                Ok(()) => code,
                Err(e) => {
                    let _ = writeln!(stderr, "error writing the result to stdout: {e}");
                    1
                }
            }
        }
        Err(err) => {
            let version = version_for_errors.unwrap_or_else(|| versions.newest().to_owned());
            let json = P::WIRE_FORMAT.error_json(err, version);
            if let Err(e) = stdout.write_all(&json).and_then(|()| stdout.flush()) {
                let _ = writeln!(stderr, "error writing the error JSON to stdout: {e}");
            }
            1
        }
    }
}

/// What to print on success.
enum Output {
    Nothing,
    Stdout(Vec<u8>, i32),
}

fn run_command<P: Plugin>(
    plugin: &P,
    versions: &PluginInfo,
    about: &str,
    env: &dyn Env,
    stdin: &mut dyn Read,
    stderr: &StderrSink<'_>,
    version_for_errors: &mut Option<String>,
) -> Result<Output, Error> {
    let cni_env = match CniEnv::read(env) {
        Ok(e) => e,
        // Run by hand with no command: say what this is, as the reference.
        Err(e)
            if e.code == Code::INVALID_ENVIRONMENT_VARIABLES
                && env_is_empty(env, "CNI_COMMAND")
                && !about.is_empty() =>
        {
            stderr.write_bytes(
                format!(
                    "{about}\nCNI protocol versions supported: {}\n",
                    versions.supported().join(", ")
                )
                .as_bytes(),
            );
            return Ok(Output::Nothing);
        }
        Err(e) => {
            // A runtime did call us: label the error with the configuration's
            // version, as every error we print is (best effort; the checks
            // themselves never depend on stdin here).
            if !env_is_empty(env, "CNI_COMMAND") {
                let mut bytes = Vec::new();
                if stdin.read_to_end(&mut bytes).is_ok() {
                    let sanitized = sanitize_utf8(&bytes);
                    let json = sanitized.as_deref().unwrap_or(&bytes);
                    if let Ok([version]) = peek_fields(json, ["cniVersion"]) {
                        *version_for_errors = config_version(version).ok();
                    }
                }
            }
            return Err(e);
        }
    };
    let command = Command::from_bytes(&cni_env.command);

    let mut stdin_bytes = Vec::with_capacity(16 * 1024);
    stdin
        .read_to_end(&mut stdin_bytes)
        .map_err(|e| Error::new(Code::IO_FAILURE, format!("error reading from stdin: {e}")))?;

    // The reference's decoder reads invalid UTF-8 in strings as U+FFFD
    // instead of failing; so do we. Valid input is not copied.
    let sanitized = sanitize_utf8(&stdin_bytes);
    let json: &[u8] = sanitized.as_deref().unwrap_or(&stdin_bytes);

    if command == Command::Version {
        // The spec: answer in the version the runtime asked in, when we
        // support it (the reference ignores stdin here).
        let requested = peek_fields(json, ["cniVersion"]).ok().and_then(|[v]| v);
        let requested = requested.as_ref().and_then(|v| v.as_str());
        return Ok(Output::Stdout(versions.version_answer(requested), 0));
    }

    // One pass over the configuration for both fields the checks need; the
    // checks then run in the reference's order.
    let [name, version] = peek_fields(json, ["name", "cniVersion"]).map_err(|e| {
        Error::new(
            Code::DECODING_FAILURE,
            format!("error unmarshall network config: {e}"),
        )
    })?;
    let config_version = config_version(version);
    if let Ok(v) = &config_version {
        *version_for_errors = Some(v.clone());
    }
    check_network_name(name)?;

    if let Command::Other(verb) = &command {
        return Err(Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            format!("unknown CNI_COMMAND: {verb}"),
        ));
    }

    let config_version = config_version?;
    let minimum = match command {
        Command::Check => Some("0.4.0"),
        Command::Gc | Command::Status => Some("1.1.0"),
        _ => None,
    };
    if let Some(minimum) = minimum {
        check_minimum_version(&command, &config_version, minimum, versions)?;
    }
    versions.reconcile(&config_version).map_err(|e| {
        Error::new(Code::INCOMPATIBLE_CNI_VERSION, "incompatible CNI versions")
            .with_details(e.details())
    })?;

    let netns_override = matches!(
        cni_env.netns_override.to_ascii_uppercase().as_slice(),
        b"TRUE" | b"1"
    );
    if matches!(command, Command::Add | Command::Del) && !netns_override {
        reject_own_netns(&cni_env.netns)?;
    }

    let config = P::Config::from_config(json)?;
    // The plugin gets the bytes as they came; the copy is no longer needed.
    drop(sanitized);
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let request = Request {
        command,
        container_id: lossy(&cni_env.container_id),
        netns: (!cni_env.netns.is_empty())
            .then(|| PathBuf::from(OsStr::from_bytes(&cni_env.netns))),
        ifname: lossy(&cni_env.ifname),
        args: lossy(&cni_env.args),
        path: split_path(&cni_env.path),
        raw_path: lossy(&cni_env.path),
        netns_override: lossy(&cni_env.netns_override),
        config_version: config_version.clone(),
        config,
        stdin: stdin_bytes,
        trace: TraceContext::from_env(env),
        stderr,
    };

    let reply = call(plugin, &request)?;
    match reply {
        None => Ok(Output::Nothing),
        Some(Reply::Raw { stdout, exit_code }) => Ok(Output::Stdout(stdout, exit_code)),
        Some(Reply::Result(result)) => {
            let converted = SpecVersion::parse(&config_version)
                .map_err(|e| e.to_string())
                .and_then(|v| result.into_version(&v).map_err(|e| e.to_string()))
                .map_err(|e| {
                    Error::new(
                        Code::INTERNAL,
                        format!("failed to convert result to version {config_version}: {e}"),
                    )
                })?;
            Ok(Output::Stdout(P::WIRE_FORMAT.result_json(&converted), 0))
        }
    }
}

/// JSON bytes made readable the way the reference's decoder reads them:
/// every byte of an invalid UTF-8 sequence becomes U+FFFD (Go decodes an
/// invalid byte as one replacement rune). `None` when `bytes` is valid
/// UTF-8 already, so valid input is never copied; the worst case, input
/// that is all invalid bytes, triples in size.
pub fn sanitize_utf8(bytes: &[u8]) -> Option<Vec<u8>> {
    if std::str::from_utf8(bytes).is_ok() {
        return None;
    }
    const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 2);
    for chunk in bytes.utf8_chunks() {
        out.extend_from_slice(chunk.valid().as_bytes());
        for _ in chunk.invalid() {
            out.extend_from_slice(REPLACEMENT);
        }
    }
    Some(out)
}

fn env_is_empty(env: &dyn Env, name: &str) -> bool {
    env.var(name).is_none_or(|v| v.is_empty())
}

/// The reference's check of the configuration's `name`: code 6 when it is
/// not a string, code 7 when it is missing or invalid.
fn check_network_name(name: Option<serde_json::Value>) -> Result<(), Error> {
    let name = match name {
        None => String::new(),
        Some(serde_json::Value::String(s)) => s,
        Some(other) => {
            return Err(Error::new(
                Code::DECODING_FAILURE,
                format!("error unmarshall network config: name must be a string, got {other}"),
            ))
        }
    };
    validate_network_name(&name)
}

/// The configuration's `cniVersion`: "0.1.0" when absent or empty, code 6
/// when not a string.
fn config_version(version: Option<serde_json::Value>) -> Result<String, Error> {
    match version {
        None => Ok("0.1.0".to_owned()),
        Some(serde_json::Value::String(s)) if s.is_empty() => Ok("0.1.0".to_owned()),
        Some(serde_json::Value::String(s)) => Ok(s),
        Some(other) => Err(Error::new(
            Code::DECODING_FAILURE,
            format!(
                "decoding version from network config: cniVersion must be a string, got {other}"
            ),
        )),
    }
}

/// CHECK needs a configuration of 0.4.0 or later, GC and STATUS of 1.1.0 or
/// later, and a plugin that supports at least the configuration's version;
/// versions are compared as the reference compares them, and one that
/// cannot be read even leniently is code 6.
fn check_minimum_version(
    command: &Command,
    config: &str,
    minimum: &str,
    versions: &PluginInfo,
) -> Result<(), Error> {
    let decode =
        |e: cni_version::LooseVersionError| Error::new(Code::DECODING_FAILURE, e.to_string());
    if !LooseVersion::greater_or_equal(config, minimum).map_err(decode)? {
        return Err(Error::new(
            Code::INCOMPATIBLE_CNI_VERSION,
            format!("config version does not allow {command}"),
        ));
    }
    for supported in versions.supported() {
        if LooseVersion::greater_or_equal(supported, config).map_err(decode)? {
            return Ok(());
        }
    }
    Err(Error::new(
        Code::INCOMPATIBLE_CNI_VERSION,
        format!("plugin version does not allow {command}"),
    ))
}

/// Calls the plugin's method for `req.command`, turning errors and panics
/// into CNI errors; `Some` only for ADD, the one command that prints.
fn call<P: Plugin>(plugin: &P, req: &Request<P::Config>) -> Result<Option<Reply>, Error> {
    let command = &req.command;
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<Option<Reply>, BoxError> {
        match command {
            Command::Add => plugin.add(req).map(Some),
            Command::Del => plugin.del(req).map(|()| None),
            Command::Check if P::CHECK == CheckSupport::Unsupported => {
                Err(CheckSupport::unsupported_error().into())
            }
            Command::Check => plugin.check(req).map(|()| None),
            Command::Gc => plugin.gc(req).map(|()| None),
            Command::Status => plugin.status(req).map(|()| None),
            // Answered before the configuration is read.
            Command::Version | Command::Other(_) => Ok(None),
        }
    }));
    match outcome {
        Ok(Ok(reply)) => Ok(reply),
        Ok(Err(err)) => Err(Error::from_boxed(err)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".to_owned());
            Err(
                Error::new(Code::INTERNAL, format!("plugin panicked during {command}"))
                    .with_details(what),
            )
        }
    }
}
