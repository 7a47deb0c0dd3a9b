//! One execution of the plugin, as observed: what it was given, how it
//! exited and every byte it printed.

use std::fmt;

use cni_invoke::Exit;
use serde_json::Value;

/// One execution of the plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Which step of which scenario: `lifecycle 0.4.0: DEL again`.
    pub step: String,
    /// `CNI_COMMAND` as passed (absent when the step removes it).
    pub command: Option<String>,
    /// The `CNI_*` variables passed, in order; absent ones are not listed.
    pub env: Vec<(String, String)>,
    /// Standard input.
    pub stdin: Vec<u8>,
    /// How it ended.
    pub exit: Exit,
    /// Standard output, byte for byte.
    pub stdout: Vec<u8>,
    /// Standard error, byte for byte.
    pub stderr: Vec<u8>,
}

/// A CNI error object as a plugin printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorObject {
    /// `code`, when it is an unsigned integer.
    pub code: Option<u64>,
    /// `msg` and `details`, joined, for "names the variable" checks.
    pub text: String,
}

impl Call {
    /// Exit status 0.
    pub fn succeeded(&self) -> bool {
        self.exit.success()
    }

    /// The JSON documents on stdout, in order, or why stdout is not a
    /// sequence of JSON documents (text, truncation).
    pub fn documents(&self) -> Result<Vec<Value>, String> {
        serde_json::Deserializer::from_slice(&self.stdout)
            .into_iter::<Value>()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("stdout is not JSON: {e}"))
    }

    /// The one JSON object on stdout, if that is exactly what it holds.
    pub fn object(&self) -> Option<serde_json::Map<String, Value>> {
        match self.documents().ok()?.as_mut_slice() {
            [Value::Object(map)] => Some(std::mem::take(map)),
            _ => None,
        }
    }

    /// Stdout is empty but for whitespace.
    pub fn stdout_is_empty(&self) -> bool {
        self.stdout.iter().all(u8::is_ascii_whitespace)
    }

    /// The error object on stdout: one object with a `code` or `msg` key.
    pub fn error_object(&self) -> Option<ErrorObject> {
        let map = self.object()?;
        if !map.contains_key("code") && !map.contains_key("msg") {
            return None;
        }
        let text = ["msg", "details"]
            .iter()
            .filter_map(|k| map.get(*k).and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(": ");
        Some(ErrorObject {
            code: map.get("code").and_then(Value::as_u64),
            text,
        })
    }

    /// "exit status 1, error code 4" style summary of the outcome.
    pub fn outcome(&self) -> String {
        match self.error_object() {
            Some(ErrorObject {
                code: Some(code), ..
            }) => format!("{}, error code {code}", self.exit),
            _ => self.exit.to_string(),
        }
    }
}

/// Shows the call as a finding does: the step, the variables, stdin, then
/// the exit and both outputs (long outputs shortened).
impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        writeln!(f, "step:   {}", self.step)?;
        writeln!(f, "env:    {env}")?;
        writeln!(f, "stdin:  {}", shorten(&self.stdin))?;
        writeln!(f, "exit:   {}", self.exit)?;
        writeln!(f, "stdout: {}", shorten(&self.stdout))?;
        write!(f, "stderr: {}", shorten(&self.stderr))
    }
}

/// The bytes as a quoted string, cut at 600 characters.
pub fn shorten(bytes: &[u8]) -> String {
    const MAX: usize = 600;
    let text = String::from_utf8_lossy(bytes);
    if text.chars().count() > MAX {
        format!("{:?}...", text.chars().take(MAX).collect::<String>())
    } else {
        format!("{text:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(stdout: &str, status: i32) -> Call {
        Call {
            step: "test".into(),
            command: Some("ADD".into()),
            env: vec![],
            stdin: vec![],
            exit: Exit::Status(status),
            stdout: stdout.as_bytes().to_vec(),
            stderr: vec![],
        }
    }

    #[test]
    fn two_documents_on_stdout_are_seen_as_two() {
        let call = printed(r#"{"cniVersion":"1.0.0"}{"code":7,"msg":"x"}"#, 1);
        assert_eq!(call.documents().unwrap().len(), 2);
        assert!(call.object().is_none());
    }

    #[test]
    fn text_after_a_document_is_not_json() {
        assert!(printed("{}\nhello", 0).documents().is_err());
    }

    #[test]
    fn an_error_object_yields_its_code_and_message() {
        let call = printed(r#"{"code":4,"msg":"missing","details":"CNI_NETNS"}"#, 1);
        let error = call.error_object().unwrap();
        assert_eq!(error.code, Some(4));
        assert_eq!(error.text, "missing: CNI_NETNS");
        assert_eq!(call.outcome(), "exit status 1, error code 4");
    }
}
