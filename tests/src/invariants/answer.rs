//! The answer of one invocation: the invariants every plugin answer must
//! hold, for a process ([`check_answer`]) and in-process ([`check_stdout`]).

use cni_types::{CniResult, SpecVersion};
use serde_json::Value;

/// Whether `code` may appear in a CNI error: a well-known code (1-8, 11,
/// 50, 51, 999) or a plugin-specific one (100 and above).
pub fn is_allowed_code(code: u64) -> bool {
    matches!(code, 1..=8 | 11 | 50 | 51 | 999) || code >= 100
}

/// What stdout held, once the answer is known to be well formed.
#[derive(Debug, Clone, PartialEq)]
pub enum Printed {
    /// Success with nothing on stdout.
    Nothing,
    /// Success with one JSON document.
    Document(Value),
    /// Failure with one CNI error.
    Error(cni_types::Error),
}

/// Whether `haystack` contains `needle`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// Exactly one JSON document (whitespace around it allowed).
pub fn one_json_document(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "not exactly one JSON document ({e}): {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(400)])
        )
    })
}

/// A CNI error JSON with an allowed code.
pub fn check_error_json(doc: &Value) -> Result<cni_types::Error, String> {
    let code = doc
        .get("code")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("error JSON without a numeric code: {doc}"))?;
    if !is_allowed_code(code) {
        return Err(format!(
            "error code {code} is neither well-known nor >= 100: {doc}"
        ));
    }
    if !doc.get("msg").is_some_and(Value::is_string) {
        return Err(format!("error JSON without a string msg: {doc}"));
    }
    serde_json::from_value(doc.clone()).map_err(|e| format!("not a CNI error ({e}): {doc}"))
}

/// The invariants of a plugin process's answer (see the module docs): no
/// panic message on stderr, and [`check_stdout`].
pub fn check_answer(exit_code: i32, stdout: &[u8], stderr: &[u8]) -> Result<Printed, String> {
    if contains(stderr, b"panicked at") {
        return Err(format!(
            "panic message on stderr: {}",
            String::from_utf8_lossy(stderr)
        ));
    }
    check_stdout(exit_code, stdout)
}

/// The invariants of stdout and the exit status (see the module docs):
/// nothing or one JSON document on success, one CNI error with an allowed
/// code otherwise.
pub fn check_stdout(exit_code: i32, stdout: &[u8]) -> Result<Printed, String> {
    if exit_code == 0 {
        if stdout.is_empty() {
            return Ok(Printed::Nothing);
        }
        return one_json_document(stdout).map(Printed::Document);
    }
    let doc = one_json_document(stdout)
        .map_err(|e| format!("exit status {exit_code} without one CNI error on stdout: {e}"))?;
    check_error_json(&doc).map(Printed::Error)
}

/// A result printed in `version`: one JSON document naming that version,
/// that parses back in it.
pub fn check_result_json(version: &SpecVersion, bytes: &[u8]) -> Result<CniResult, String> {
    let doc = one_json_document(bytes)?;
    let named = doc.get("cniVersion").and_then(Value::as_str);
    if named != Some(version.to_string().as_str()) {
        return Err(format!("result printed in {version} names {named:?}"));
    }
    let back = CniResult::parse(&version.to_string(), bytes).map_err(|e| {
        format!(
            "result printed in {version} does not parse back ({e}): {}",
            String::from_utf8_lossy(bytes)
        )
    })?;
    if back.version() != version {
        return Err(format!(
            "result printed in {version} parses back as {}",
            back.version()
        ));
    }
    Ok(back)
}
