//! `noop_debug`: the noop test double and its debug file.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use serde_json::Value;

use super::answer::{check_stdout, contains, one_json_document};
use super::fail;

/// The parts of a `noop_debug` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoopDebugInput {
    /// `CNI_COMMAND`.
    pub command: Vec<u8>,
    /// The debug file's contents before the call.
    pub debug: Vec<u8>,
    /// The command log's contents before the call (it always exists; the
    /// configuration's `commandLog` is pointed at it).
    pub log: Vec<u8>,
    /// stdin.
    pub stdin: Vec<u8>,
}

/// Splits a `noop_debug` input: command, debug file, command log, each
/// ended by NUL, then stdin (missing parts are empty).
pub fn decode_noop_debug(data: &[u8]) -> NoopDebugInput {
    let mut parts = data.splitn(4, |b| *b == 0);
    let mut next = || parts.next().unwrap_or_default().to_vec();
    NoopDebugInput {
        command: next(),
        debug: next(),
        log: next(),
        stdin: next(),
    }
}

/// The inverse of [`decode_noop_debug`] (for parts without NUL bytes).
pub fn encode_noop_debug(command: &str, debug: &[u8], log: &[u8], stdin: &[u8]) -> Vec<u8> {
    [command.as_bytes(), debug, log, stdin].join(&0u8)
}

/// Whether `bytes` is a complete debug file the noop wrote for `command`.
fn is_written_debug_file(bytes: &[u8], command: &str) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|v| {
        v.get("Command").and_then(Value::as_str) == Some(command)
            && v.get("CmdArgs").is_some_and(Value::is_object)
    })
}

/// The `noop_debug` target: the noop (`noop::main_with`, the whole binary
/// but the process) run on the input's stdin with `CNI_ARGS=DEBUG=<a debug
/// file holding the input's bytes>` in a fresh temporary directory; a
/// `commandLog` in the configuration is pointed at a file there (so no
/// input writes outside it).
///
/// The noop repeats what its debug file asks for, so besides
/// [`check_stdout`] an answer is also well formed when it is exactly that:
/// `ReportResult` verbatim with `ExitWithCode`, or the error the file asks
/// for with its code, or a test setup error (exit status 2, nothing on
/// stdout, the reason on stderr) where the reference noop panics. Files are
/// never left half-written: the debug file and the command log are after
/// the call either as they were or complete.
pub fn fuzz_noop_debug(data: &[u8]) {
    let input = decode_noop_debug(data);
    if let Err(e) = check_noop_debug(&input) {
        fail("noop_debug", data, e);
    }
}

fn check_noop_debug(input: &NoopDebugInput) -> Result<(), String> {
    use plugins_sample::noop;

    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let debug_path = dir.path().join("debug.json");
    let log_path = dir.path().join("log.json");
    fs::write(&debug_path, &input.debug).map_err(|e| e.to_string())?;
    fs::write(&log_path, &input.log).map_err(|e| e.to_string())?;
    let stdin = confine_command_log(&input.stdin, &log_path);

    let debug_arg = format!("DEBUG={}", debug_path.display());
    let env: BTreeMap<&str, OsString> = BTreeMap::from([
        ("CNI_COMMAND", OsString::from_vec(input.command.clone())),
        ("CNI_CONTAINERID", "c1".into()),
        ("CNI_NETNS", "/var/run/netns/cni-fuzz-does-not-exist".into()),
        ("CNI_IFNAME", "eth0".into()),
        ("CNI_PATH", "/opt/cni/bin".into()),
        ("CNI_ARGS", debug_arg.into()),
    ]);
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let exit_code = noop::main_with(&env, &stdin, &mut stdout, &mut stderr);
    let outcome = || {
        format!(
            "exit status {exit_code}, stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        )
    };

    let asked = noop::debug::Debug::parse(&input.debug).ok();
    let general = check_stdout(exit_code, &stdout);
    let well_formed = general.is_ok()
        || is_setup_error(exit_code, &stdout, &stderr)
        || asked
            .as_ref()
            .is_some_and(|d| answers_as_asked(d, exit_code, &stdout));
    if !well_formed {
        return Err(format!(
            "{}; {}",
            general.err().unwrap_or_default(),
            outcome()
        ));
    }

    let command = String::from_utf8_lossy(&input.command);
    let debug_after = fs::read(&debug_path).map_err(|e| e.to_string())?;
    if debug_after != input.debug && !is_written_debug_file(&debug_after, &command) {
        return Err(format!(
            "debug file half-written: {:?}; {}",
            String::from_utf8_lossy(&debug_after),
            outcome()
        ));
    }
    let log_after = fs::read(&log_path).map_err(|e| e.to_string())?;
    if log_after != input.log {
        let complete = serde_json::from_slice::<Value>(&log_after).is_ok_and(|v| {
            v.as_array()
                .and_then(|a| a.last())
                .and_then(|e| e.get("Command"))
                .and_then(Value::as_str)
                == Some(&command)
        });
        if !complete {
            return Err(format!(
                "command log half-written: {:?}; {}",
                String::from_utf8_lossy(&log_after),
                outcome()
            ));
        }
    }
    let mut left: Vec<_> = fs::read_dir(dir.path())
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    left.sort();
    if left != ["debug.json", "log.json"] {
        return Err(format!("files left behind: {left:?}"));
    }
    Ok(())
}

/// The noop's stand-in for the reference's panics: exit status 2, nothing
/// on stdout, one reason on stderr.
fn is_setup_error(exit_code: i32, stdout: &[u8], stderr: &[u8]) -> bool {
    exit_code == plugins_sample::noop::SETUP_ERROR_STATUS
        && stdout.is_empty()
        && contains(stderr, b"test setup error")
}

/// Whether the noop answered exactly what its debug file asked for.
fn answers_as_asked(
    debug: &plugins_sample::noop::debug::Debug,
    exit_code: i32,
    stdout: &[u8],
) -> bool {
    if !debug.report_error.is_empty() {
        let want_code = if debug.report_error_code == 0 {
            999
        } else {
            debug.report_error_code
        };
        return exit_code == 1
            && serde_json::from_slice::<cni_types::Error>(stdout)
                .is_ok_and(|e| e.code.0 == want_code && e.msg == debug.report_error);
    }
    let want_status = if debug.exit_with_code > 0 {
        i32::try_from(debug.exit_with_code).unwrap_or(i32::MAX)
    } else {
        0
    };
    exit_code == want_status
        && (stdout == debug.report_result.as_bytes()
            || (matches!(debug.report_result.as_str(), "PASSTHROUGH" | "INJECT-DNS")
                && one_json_document(stdout).is_ok()))
}

/// stdin with a `commandLog` string pointed at `log` (anything else as is).
fn confine_command_log(stdin: &[u8], log: &Path) -> Vec<u8> {
    let lossy = String::from_utf8_lossy(stdin);
    let Ok(Value::Object(mut conf)) = serde_json::from_str::<Value>(&lossy) else {
        return stdin.to_vec();
    };
    match conf.get_mut("commandLog") {
        Some(v @ Value::String(_)) => {
            *v = Value::String(log.display().to_string());
            serde_json::to_vec(&conf).unwrap_or_else(|_| stdin.to_vec())
        }
        _ => stdin.to_vec(),
    }
}
