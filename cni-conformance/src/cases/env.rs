//! The execution protocol's inputs (SPEC-1.0.0 §2 Parameters, §5 Error):
//! required variables, unreadable configuration, unsupported versions.

use std::sync::Arc;

use cni_skel::Command;
use cni_types::SpecVersion;
use serde_json::Value;

use crate::call::Call;
use crate::case::{Case, Finding, Level, Verdict};
use crate::config::interface_result;
use crate::session::Session;

/// The variables each command requires besides `CNI_COMMAND`, as the
/// spec's "Required environment parameters" lists them.
pub const REQUIRED: [(Command, &[&str]); 3] = [
    (
        Command::Add,
        &["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"],
    ),
    (Command::Del, &["CNI_CONTAINERID", "CNI_IFNAME"]),
    (
        Command::Check,
        &["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"],
    ),
];

pub use crate::scenarios::EnvProbes as Probes;

const CONTAINER: &str = "cnic-env";

fn probe(s: &Session) -> Probes {
    let Some(newest) = s.versions().last().cloned() else {
        return Probes {
            missing: Vec::new(),
            no_command: None,
            malformed: None,
            unsupported: None,
        };
    };
    // A name of its own, so what a faulty plugin leaves behind does not
    // meet the lifecycle's interface.
    let ifname = format!("{}e", s.target().ifname);
    s.prepare_link(s.netns(), &ifname);
    let mut missing = Vec::new();
    for (command, vars) in REQUIRED {
        let config = match command {
            Command::Check => match s.newest_from(SpecVersion::V0_4_0) {
                Some(v) => s.config(&v, Some(&interface_result(&v, s.netns(), &ifname, 8))),
                None => continue,
            },
            _ => s.add_config(&newest, s.netns(), &ifname, 8),
        };
        for var in vars.iter().copied() {
            let mut invocation = s.invocation(command.clone(), CONTAINER, &ifname);
            match var {
                "CNI_CONTAINERID" => invocation.container_id.clear(),
                "CNI_NETNS" => invocation.netns.clear(),
                _ => invocation.ifname.clear(),
            }
            let step = format!("{command} without {var}");
            let call = s.exec(step, &invocation, config.to_string().as_bytes());
            missing.push((var, call));
        }
    }
    let config = s.add_config(&newest, s.netns(), &ifname, 8).to_string();
    let mut invocation = s.invocation(Command::Add, CONTAINER, &ifname);
    invocation.command = Command::Other("".into());
    let no_command = s.exec("ADD without CNI_COMMAND", &invocation, config.as_bytes());

    let add = s.invocation(Command::Add, CONTAINER, &ifname);
    let truncated = &config.as_bytes()[..config.len() / 2];
    let malformed = s.exec("ADD with a truncated configuration", &add, truncated);
    let mut future = s.add_config(&newest, s.netns(), &ifname, 8);
    future["cniVersion"] = Value::from("99.0.0");
    let unsupported = s.exec(
        "ADD with cniVersion 99.0.0",
        &add,
        future.to_string().as_bytes(),
    );
    Probes {
        missing,
        no_command: Some(no_command),
        malformed: Some(malformed),
        unsupported: Some(unsupported),
    }
}

fn probes(s: &Session) -> &Probes {
    s.env.get_or_init(|| probe(s))
}

/// A finding unless the call failed with error `code`.
fn expect_error(call: &Arc<Call>, code: u64, what: &str) -> Option<Finding> {
    if call.succeeded() {
        return Some(Finding::on(call, format!("{what}: succeeded")));
    }
    match call.error_object().and_then(|e| e.code) {
        Some(c) if c == code => None,
        Some(c) => Some(Finding::on(
            call,
            format!("{what}: error code {c}, not {code}"),
        )),
        None => Some(Finding::on(
            call,
            format!("{what}: {} with no error code", call.output.exit),
        )),
    }
}

fn required_vars(s: &Session) -> Verdict {
    let findings = probes(s)
        .missing
        .iter()
        .filter_map(|(_, call)| expect_error(call, 4, &call.step))
        .collect();
    Verdict::from_findings(findings)
}

fn names_the_variable(s: &Session) -> Verdict {
    let findings = probes(s)
        .missing
        .iter()
        .filter_map(|(var, call)| {
            let error = call.error_object().filter(|e| e.code == Some(4))?;
            (!error.text.contains(var)).then(|| {
                Finding::on(
                    call,
                    format!("{}: the error does not name {var}", call.step),
                )
            })
        })
        .collect();
    Verdict::from_findings(findings)
}

fn no_command(s: &Session) -> Verdict {
    match &probes(s).no_command {
        None => Verdict::Skip("no version to configure".into()),
        Some(call) => {
            Verdict::from_findings(expect_error(call, 4, &call.step).into_iter().collect())
        }
    }
}

fn malformed_stdin(s: &Session) -> Verdict {
    match &probes(s).malformed {
        None => Verdict::Skip("no version to configure".into()),
        Some(call) => {
            Verdict::from_findings(expect_error(call, 6, &call.step).into_iter().collect())
        }
    }
}

fn unsupported_version(s: &Session) -> Verdict {
    match &probes(s).unsupported {
        None => Verdict::Skip("no version to configure".into()),
        Some(call) if call.succeeded() => {
            Verdict::Fail(vec![Finding::on(call, format!("{}: succeeded", call.step))])
        }
        Some(_) => Verdict::Pass,
    }
}

fn unsupported_version_code(s: &Session) -> Verdict {
    match &probes(s).unsupported {
        None => Verdict::Skip("no version to configure".into()),
        Some(call) if call.succeeded() => {
            Verdict::Skip("not refused (see ENV-UNSUPPORTED-VERSION)".into())
        }
        Some(call) => {
            Verdict::from_findings(expect_error(call, 1, &call.step).into_iter().collect())
        }
    }
}

/// The cases of this section.
pub const CASES: [Case; 6] = [
    Case {
        id: "ENV-REQUIRED",
        spec: "SPEC-1.0.0 §2 Parameters, §5 Error",
        quote: "Required environment parameters: `CNI_COMMAND` `CNI_CONTAINERID` `CNI_NETNS` `CNI_IFNAME` (ADD, CHECK; DEL: `CNI_CONTAINERID` `CNI_IFNAME`) ... `4` Invalid necessary environment variables, like CNI_COMMAND, CNI_CONTAINERID, etc.",
        level: Level::Must,
        ipam_level: None,
        check: required_vars,
    },
    Case {
        id: "ENV-NO-COMMAND",
        spec: "SPEC-1.0.0 §2 Parameters, §5 Error",
        quote: "`CNI_COMMAND`: indicates the desired operation ... `4` Invalid necessary environment variables, like CNI_COMMAND, CNI_CONTAINERID, etc.",
        // A warning: the reference skel, like ours, treats a call without
        // CNI_COMMAND as a person running the binary by hand, prints what
        // it is on stderr and exits 0 with nothing on stdout.
        level: Level::Should,
        ipam_level: None,
        check: no_command,
    },
    Case {
        id: "ENV-NAMES-VARIABLE",
        spec: "SPEC-1.0.0 §5 Error",
        quote: "`4` Invalid necessary environment variables ... The error message must contain the names of invalid variables.",
        // A warning: runtimes do not read the message; people do.
        level: Level::Should,
        ipam_level: None,
        check: names_the_variable,
    },
    Case {
        id: "ENV-MALFORMED-STDIN",
        spec: "SPEC-1.0.0 §5 Error",
        quote: "`6` Failed to decode content. For example, failed to unmarshal network config from bytes",
        level: Level::Should,
        ipam_level: None,
        check: malformed_stdin,
    },
    Case {
        id: "ENV-UNSUPPORTED-VERSION",
        spec: "SPEC-0.4.0 Result; SPEC-1.0.0 §2 Errors",
        quote: "the cniVersion returned by the plugin in the result must be consistent with the cniVersion specified in Network Configuration ... A plugin must exit with a return code of 0 on success, and non-zero on failure.",
        level: Level::Must,
        ipam_level: None,
        check: unsupported_version,
    },
    Case {
        id: "ENV-UNSUPPORTED-VERSION-CODE",
        spec: "SPEC-0.4.0 Result; SPEC-1.0.0 §5 Error",
        quote: "If the cniVersion in the network configuration is not supported by the plugin, the plugin should return an error code 1 ... `1` Incompatible CNI version",
        level: Level::Should,
        ipam_level: None,
        check: unsupported_version_code,
    },
];
