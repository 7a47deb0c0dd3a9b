//! `VERSION` (SPEC-1.0.0 §2 VERSION, §5 Version): the probe every runtime
//! makes first, and unknown commands.

use cni_skel::Command;
use cni_types::SpecVersion;
use serde_json::{json, Value};

use crate::call::Call;
use crate::case::{Case, Finding, Level, Verdict};
use crate::session::Session;

/// The VERSION calls, made once per run.
#[derive(Debug)]
pub struct Probes {
    /// The version sent on stdin.
    pub asked: SpecVersion,
    /// VERSION with `{"cniVersion": asked}` on stdin.
    pub reply: Call,
    /// VERSION with nothing on stdin.
    pub no_stdin: Call,
    /// What `supportedVersions` lists, as printed.
    pub listed: Vec<String>,
    /// The listed versions the tool knows (0.1.0 ..= 1.1.0), oldest first;
    /// all of them when the plugin lists none.
    pub supported: Vec<SpecVersion>,
}

/// Runs the VERSION probes.
pub fn probe(session: &Session, asked: SpecVersion) -> Probes {
    let invocation = session.invocation(Command::Version, "", "");
    let stdin = json!({"cniVersion": asked.to_string()}).to_string();
    let reply = session.exec("VERSION", &invocation, stdin.as_bytes());
    let no_stdin = session.exec("VERSION without stdin", &invocation, b"");
    let listed: Vec<String> = reply
        .object()
        .and_then(|o| o.get("supportedVersions").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let mut supported: Vec<SpecVersion> = SpecVersion::ALL
        .into_iter()
        .filter(|v| listed.iter().any(|l| *l == v.to_string()))
        .collect();
    if supported.is_empty() {
        supported = SpecVersion::ALL.to_vec();
    }
    Probes {
        asked,
        reply,
        no_stdin,
        listed,
        supported,
    }
}

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
fn reply_verdict(call: &Call) -> Verdict {
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
    invocation.command = "BOGUS".into();
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
