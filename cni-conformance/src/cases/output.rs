//! Output discipline (SPEC-1.0.0 §2 Errors, §5), for every call the run
//! made: these cases run last and read the whole log.

use cni_invoke::Exit;
use cni_skel::Command;
use serde_json::Value;

use crate::call::Call;
use crate::case::{Case, Finding, Level, Verdict};
use crate::cases::lifecycle::lifecycle;
use crate::session::Session;

/// Findings shown per case; the rest are counted.
const SHOWN: usize = 8;

/// Applies `problem` to every call, after making sure there are calls to
/// look at (a run of only these cases exercises one lifecycle).
fn every_call(s: &Session, problem: impl Fn(&Call) -> Option<String>) -> Verdict {
    if let Some(v) = s.versions().last() {
        lifecycle(s, v);
    }
    let mut findings: Vec<Finding> = s
        .calls()
        .iter()
        .filter_map(|call| problem(call).map(|p| Finding::on(call, format!("{}: {p}", call.step))))
        .collect();
    if findings.len() > SHOWN {
        let more = findings.len() - SHOWN;
        findings.truncate(SHOWN);
        findings.push(Finding::new(format!("... and {more} more calls")));
    }
    Verdict::from_findings(findings)
}

fn one_document(s: &Session) -> Verdict {
    every_call(s, |call| match call.documents() {
        Err(e) => Some(e),
        Ok(docs) if docs.len() > 1 => Some(format!("{} JSON documents on stdout", docs.len())),
        Ok(_) => None,
    })
}

fn no_error_on_success(s: &Session) -> Verdict {
    every_call(s, |call| {
        (call.succeeded() && call.error_object().is_some())
            .then(|| "exit status 0 with an error object on stdout".into())
    })
}

fn error_object(s: &Session) -> Verdict {
    every_call(s, |call| {
        if !matches!(call.output.exit, Exit::Status(c) if c != 0) {
            return None;
        }
        let object = call.object();
        let code = object.as_ref().and_then(|o| o.get("code"));
        let msg = object.as_ref().and_then(|o| o.get("msg"));
        match (code.and_then(Value::as_u64), msg.and_then(Value::as_str)) {
            (Some(_), Some(_)) => None,
            _ if call.stdout_is_empty() => {
                Some(format!("{} and nothing on stdout", call.output.exit))
            }
            _ => Some(format!(
                "{} without an error object with a numeric `code` and a string `msg`",
                call.output.exit
            )),
        }
    })
}

fn void_commands_print_nothing(s: &Session) -> Verdict {
    every_call(s, |call| {
        let void = matches!(
            call.command,
            Some(Command::Del | Command::Check | Command::Gc | Command::Status)
        );
        // Anything but one document is OUTPUT-ONE-DOCUMENT's to judge.
        let printed = match call.documents().as_deref() {
            // An error object after exit 0 is OUTPUT-NO-ERROR-ON-SUCCESS's.
            Ok([Value::Object(o)]) => !o.is_empty() && call.error_object().is_none(),
            Ok([_]) => true,
            _ => false,
        };
        (void && call.succeeded() && printed).then(|| "printed a result".into())
    })
}

fn terminates(s: &Session) -> Verdict {
    every_call(s, |call| match call.output.exit {
        Exit::Status(_) => None,
        other => Some(other.to_string()),
    })
}

/// The cases of this section.
pub const CASES: [Case; 5] = [
    Case {
        id: "OUTPUT-ONE-DOCUMENT",
        spec: "SPEC-0.4.0 Result; SPEC-1.0.0 §2 Overview",
        quote: "Plugins must indicate success with a return code of zero and the following JSON printed to stdout ... Errors must be indicated by a non-zero return code and the following JSON being printed to stdout ... Configuration and results are encoded in JSON.",
        level: Level::Must,
        ipam_level: None,
        check: one_document,
    },
    Case {
        id: "OUTPUT-NO-ERROR-ON-SUCCESS",
        spec: "SPEC-1.0.0 §2 Errors; SPEC-0.4.0 Result",
        quote: "A plugin must exit with a return code of 0 on success, and non-zero on failure. ... Errors must be indicated by a non-zero return code and the following JSON being printed to stdout",
        level: Level::Must,
        ipam_level: None,
        check: no_error_on_success,
    },
    Case {
        id: "OUTPUT-ERROR-OBJECT",
        spec: "SPEC-1.0.0 §2 Errors, §5 Error",
        quote: "If the plugin encounters an error, it should output an \"error\" result structure ... `code`: A numeric error code ... `msg`: A short message characterizing the error.",
        level: Level::Should,
        ipam_level: None,
        check: error_object,
    },
    Case {
        id: "OUTPUT-VOID-EMPTY",
        spec: "SPEC-1.0.0 §5; SPEC-1.1.0 STATUS",
        quote: "Plugins must output a JSON object with the following keys upon a successful `ADD` operation ... (STATUS) Success: exit 0, nothing on stdout.",
        // A warning: runtimes ignore what DEL and CHECK print.
        level: Level::Should,
        ipam_level: None,
        check: void_commands_print_nothing,
    },
    Case {
        id: "OUTPUT-EXITS",
        spec: "SPEC-1.0.0 §2 Errors",
        quote: "A plugin must exit with a return code of 0 on success, and non-zero on failure.",
        level: Level::Must,
        ipam_level: None,
        check: terminates,
    },
];
