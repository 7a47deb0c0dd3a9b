//! `VERSION` (SPEC-1.0.0 §2 VERSION, §5 Version): the probe every runtime
//! makes first, and unknown commands.

use std::sync::Arc;

use cni_skel::Command;
use serde_json::Value;

use crate::call::Call;
use crate::case::{Case, Finding, Level, Verdict};
use crate::session::Session;

pub use crate::scenarios::VersionProbes as Probes;

/// The problem with a version reply, if any.
fn reply_problem(call: &Call) -> Option<String> {
    if !call.succeeded() {
        return Some(format!("VERSION failed ({})", call.outcome()));
    }
    let Some(reply) = call.object() else {
        return Some("stdout is not one JSON object".into());
    };
    if !reply.get("cniVersion").is_some_and(Value::is_string) {
        return Some("no string `cniVersion`".into());
    }
    match reply.get("supportedVersions") {
        Some(Value::Array(list)) if list.iter().all(Value::is_string) => None,
        _ => Some("`supportedVersions` is not a list of strings".into()),
    }
}

/// Passes when `call` is a well-formed VERSION reply, else fails with the
/// one problem [`reply_problem`] names.
fn reply_verdict(call: &Arc<Call>) -> Verdict {
    match reply_problem(call) {
        Some(problem) => Verdict::Fail(vec![Finding::on(call, problem)]),
        None => Verdict::Pass,
    }
}

fn replies(s: &Session) -> Verdict {
    reply_verdict(&s.version_probes().reply)
}

fn answers_without_stdin(s: &Session) -> Verdict {
    reply_verdict(&s.version_probes().no_stdin)
}

fn lists_valid_versions(s: &Session) -> Verdict {
    let probes = s.version_probes();
    if reply_problem(&probes.reply).is_some() {
        return Verdict::Skip("no version reply (see VERSION-REPLY)".into());
    }
    let bad: Vec<&String> = probes
        .listed
        .iter()
        .filter(|v| semver_like(v).is_none())
        .collect();
    if probes.listed.is_empty() {
        return Verdict::Fail(vec![Finding::on(
            &probes.reply,
            "`supportedVersions` is empty",
        )]);
    }
    Verdict::from_findings(
        bad.into_iter()
            .map(|v| Finding::on(&probes.reply, format!("{v:?} is not a version")))
            .collect(),
    )
}

/// `MAJOR.MINOR.PATCH`, each a number (what the reference's version
/// parser accepts).
fn semver_like(v: &str) -> Option<()> {
    let parts: Vec<&str> = v.split('.').collect();
    (parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.parse::<u64>().is_ok()))
    .then_some(())
}

fn echoes_version(s: &Session) -> Verdict {
    let probes = s.version_probes();
    let Some(reply) = probes.reply.object() else {
        return Verdict::Skip("no version reply (see VERSION-REPLY)".into());
    };
    let asked = probes.asked.to_string();
    match reply.get("cniVersion").and_then(Value::as_str) {
        Some(v) if v == asked => Verdict::Pass,
        Some(other) => Verdict::Fail(vec![Finding::on(
            &probes.reply,
            format!("asked with cniVersion {asked}, answered {other}"),
        )]),
        None => Verdict::Fail(vec![Finding::on(
            &probes.reply,
            format!("asked with cniVersion {asked}, answered no cniVersion"),
        )]),
    }
}

fn refuses_unknown_command(s: &Session) -> Verdict {
    let Some(version) = s.versions().last().cloned() else {
        return Verdict::Skip("no version to configure".into());
    };
    // A name of its own: a plugin taking the command for ADD must not
    // leave the lifecycle's interface name taken.
    let ifname = format!("{}u", s.target().ifname);
    s.prepare_link(s.netns(), &ifname);
    let mut invocation = s.invocation(Command::Add, "cnic-unknown", &ifname);
    invocation.command = Command::Other("BOGUS".into());
    let config = s.add_config(&version, s.netns(), &ifname, 9);
    let call = s.exec(
        "unknown CNI_COMMAND",
        &invocation,
        config.to_string().as_bytes(),
    );
    if call.succeeded() {
        Verdict::Fail(vec![Finding::on(&call, "CNI_COMMAND=BOGUS succeeded")])
    } else {
        Verdict::Pass
    }
}

/// The cases of this section.
pub const CASES: [Case; 5] = [
    Case {
        id: "VERSION-REPLY",
        spec: "SPEC-1.0.0 §5 Version",
        quote: "Plugins must output a JSON object with the following keys upon a `VERSION` operation: `cniVersion` ... `supportedVersions`: A list of supported specification versions",
        level: Level::Must,
        ipam_level: None,
        check: replies,
    },
    Case {
        id: "VERSION-LIST-VALID",
        spec: "SPEC-1.0.0 §5 Version",
        quote: "`supportedVersions`: A list of supported specification versions",
        level: Level::Must,
        ipam_level: None,
        check: lists_valid_versions,
    },
    Case {
        id: "VERSION-ECHO",
        spec: "SPEC-1.0.0 §5 Version",
        quote: "`cniVersion`: The value of `cniVersion` specified on input",
        // A warning: runtimes ignore the value, and the reference skel
        // answers its own newest version whatever it was asked.
        level: Level::Should,
        ipam_level: None,
        check: echoes_version,
    },
    Case {
        id: "VERSION-NO-STDIN",
        spec: "SPEC-1.0.0 §2 VERSION",
        quote: "The plugin should output via standard-out a json-serialized version result object",
        // A warning: the spec's runtime always sends `{"cniVersion": ..}`,
        // but older runtimes probed with nothing on stdin.
        level: Level::Should,
        ipam_level: None,
        check: answers_without_stdin,
    },
    Case {
        id: "VERSION-UNKNOWN-COMMAND",
        spec: "SPEC-1.0.0 §2 Parameters, Errors",
        quote: "`CNI_COMMAND`: indicates the desired operation; `ADD`, `DEL`, `CHECK`, or `VERSION`. ... A plugin must exit with a return code of 0 on success, and non-zero on failure.",
        level: Level::Must,
        ipam_level: None,
        check: refuses_unknown_command,
    },
];
