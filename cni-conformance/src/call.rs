//! One execution of the plugin, as observed: what it was given, how it
//! exited and what it printed (cni-invoke's [`RawOutput`]).

use std::fmt;

use cni_invoke::{excerpt, RawOutput};
use cni_skel::Command;
use serde_json::Value;

/// One execution of the plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Which step of which scenario: `lifecycle 0.4.0: DEL again`.
    pub step: String,
    /// `CNI_COMMAND` as passed (absent when the step removes it).
    pub command: Option<Command>,
    /// The `CNI_*` variables passed, in order; absent ones are not listed.
    pub env: Vec<(String, String)>,
    /// Standard input.
    pub stdin: Vec<u8>,
    /// How it ended and what it printed, byte for byte up to
    /// cni-invoke's limits (an output past them is kept only in part:
    /// it holds no result).
    pub output: RawOutput,
}

/// A CNI error object as a plugin printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorObject {
    /// `code`, when it is an unsigned integer.
    pub code: Option<u64>,
    /// `msg` and `details`, joined, for "names the variable" checks.
    pub text: String,
}

/// How many characters of each output a call's display shows.
const SHOWN: usize = 600;

impl Call {
    /// Exit status 0.
    pub fn succeeded(&self) -> bool {
        self.output.success()
    }

    /// The JSON documents on stdout, in order, or why stdout is not a
    /// sequence of JSON documents (text, truncation, more than a result
    /// can be).
    pub fn documents(&self) -> Result<Vec<Value>, String> {
        if self.output.stdout_dropped > 0 {
            return Err(format!(
                "stdout is not JSON: {} bytes, more than any result",
                self.output.stdout.len() as u64 + self.output.stdout_dropped
            ));
        }
        serde_json::Deserializer::from_slice(&self.output.stdout)
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
        self.output.stdout_dropped == 0 && self.output.stdout.iter().all(u8::is_ascii_whitespace)
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
            }) => format!("{}, error code {code}", self.output.exit),
            _ => self.output.exit.to_string(),
        }
    }
}

/// Shows the call as a finding does: the step, the variables, stdin, then
/// the exit and both outputs (long ones shortened, saying by how much).
impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let out = &self.output;
        writeln!(f, "step:   {}", self.step)?;
        writeln!(f, "env:    {env}")?;
        writeln!(f, "stdin:  {}", excerpt(&self.stdin, 0, SHOWN))?;
        writeln!(f, "exit:   {}", out.exit)?;
        writeln!(
            f,
            "stdout: {}",
            excerpt(&out.stdout, out.stdout_dropped, SHOWN)
        )?;
        write!(
            f,
            "stderr: {}",
            excerpt(&out.stderr, out.stderr_dropped, SHOWN)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni_invoke::Exit;

    fn printed(stdout: &str, status: i32) -> Call {
        Call {
            step: "test".into(),
            command: Some(Command::Add),
            env: vec![],
            stdin: vec![],
            output: RawOutput {
                exit: Exit::Status(status),
                stdout: stdout.as_bytes().to_vec(),
                stderr: vec![],
                stdout_dropped: 0,
                stderr_dropped: 0,
            },
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
    fn a_document_cut_at_the_output_limit_is_no_result_and_says_how_long_it_was() {
        let mut call = printed("{}", 0);
        call.output.stdout_dropped = 10;
        assert_eq!(
            call.documents().unwrap_err(),
            "stdout is not JSON: 12 bytes, more than any result"
        );
        assert!(!call.stdout_is_empty());
        assert!(call.to_string().contains("(10 bytes more)"), "{call}");
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
