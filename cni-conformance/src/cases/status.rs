//! STATUS (SPEC-1.1.0 "New operations: STATUS").

use cni_invoke::Exit;
use cni_skel::Command;
use cni_types::SpecVersion;

use crate::case::{Case, Finding, Level, Verdict};
use crate::session::Session;

fn answers(s: &Session) -> Verdict {
    let v = SpecVersion::V1_1_0;
    if !s.versions().contains(&v) {
        return Verdict::Skip("1.1.0 is not exercised".into());
    }
    let call = s.exec(
        "STATUS",
        &s.invocation(Command::Status, "", ""),
        s.config(&v, None).to_string().as_bytes(),
    );
    if call.succeeded() {
        return Verdict::Pass;
    }
    if !matches!(call.output.exit, Exit::Status(_)) {
        return Verdict::Skip(format!("STATUS {} (see OUTPUT-EXITS)", call.output.exit));
    }
    match call.error_object().and_then(|e| e.code) {
        Some(50 | 51) => Verdict::Pass,
        _ => Verdict::Fail(vec![Finding::on(
            &call,
            format!("STATUS failed ({}), not with code 50 or 51", call.outcome()),
        )]),
    }
}

/// The cases of this section.
pub const CASES: [Case; 1] = [Case {
    id: "STATUS-REPLY",
    spec: "SPEC-1.1.0 STATUS",
    quote: "Success: exit 0, nothing on stdout. Not ready: non-zero exit and an error result on stdout. Error codes for STATUS: `50` plugin not available (cannot service ADD); `51` plugin not available and existing containers may have limited connectivity.",
    level: Level::Must,
    ipam_level: None,
    check: answers,
}];
