//! The container interface (SPEC-1.0.0 §2 Parameters, ADD): named as
//! asked, and never taken over when it already exists.

use cni_skel::Command;
use cni_types::SpecVersion;
use serde_json::Value;

use crate::case::{Case, Finding, Level, Verdict};
use crate::cases::add::{each_result, list};
use crate::cases::lifecycle::{lifecycle, result_of};
use crate::netns;
use crate::session::Session;
use crate::target::Kind;

fn uses_ifname(s: &Session) -> Verdict {
    if s.kind() != Kind::Interface {
        return Verdict::Skip("for interface plugins".into());
    }
    let ifname = s.target().ifname.clone();
    each_result(s, |_, result| {
        let in_sandbox: Vec<&Value> = list(result, "interfaces")
            .iter()
            .filter(|i| i["sandbox"].as_str().is_some_and(|s| !s.is_empty()))
            .map(|i| &i["name"])
            .collect();
        if in_sandbox.is_empty() || in_sandbox.iter().any(|n| **n == ifname.as_str()) {
            return vec![];
        }
        vec![format!(
            "CNI_IFNAME is {ifname}, the container interfaces are {}",
            Value::from(in_sandbox.into_iter().cloned().collect::<Vec<_>>())
        )]
    })
}

fn refuses_existing_interface(s: &Session) -> Verdict {
    if s.kind() != Kind::Interface {
        return Verdict::Skip("for interface plugins".into());
    }
    let (Some(name), Some(version)) = (s.netns_name(), s.versions().last()) else {
        return Verdict::Skip("needs a named namespace and a version".into());
    };
    // The rule is for plugins that create the interface; one that adjusts
    // an interface already there (loopback and `lo`) is not bound by it.
    let created = lifecycle(s, version)
        .links
        .as_ref()
        .is_some_and(|l| l.created(&s.target().ifname));
    if !created {
        return Verdict::Skip(format!(
            "the plugin did not create {} in its ADD",
            s.target().ifname
        ));
    }
    let ifname = format!("{}x", s.target().ifname);
    if let Err(e) = netns::add_link(name, &ifname) {
        return Verdict::Skip(format!("cannot create {ifname} beforehand: {e}"));
    }
    let id = "cnic-exists";
    let config = s.add_config(version, s.netns(), &ifname, 12);
    let add = s.exec(
        format!("ADD with {ifname} already in the namespace"),
        &s.invocation(Command::Add, id, &ifname),
        config.to_string().as_bytes(),
    );
    let verdict = if add.succeeded() {
        // Release what it took, for the scenarios after this one.
        let prev = result_of(&add).filter(|_| *version >= SpecVersion::V0_4_0);
        s.exec(
            format!("DEL after ADD with {ifname} already there"),
            &s.invocation(Command::Del, id, &ifname),
            s.config(version, prev.as_ref()).to_string().as_bytes(),
        );
        Verdict::Fail(vec![Finding::on(
            &add,
            format!("{ifname} already existed in CNI_NETNS and ADD succeeded"),
        )])
    } else {
        Verdict::Pass
    };
    netns::delete_link(name, &ifname);
    verdict
}

/// The cases of this section.
pub const CASES: [Case; 2] = [
    Case {
        id: "ADD-IFNAME",
        spec: "SPEC-1.0.0 §2 Parameters",
        quote: "`CNI_IFNAME`: Name of the interface to create inside the container; if the plugin is unable to use this interface name it must return an error.",
        level: Level::Must,
        ipam_level: None,
        check: uses_ifname,
    },
    Case {
        id: "ADD-EXISTING-INTERFACE",
        spec: "SPEC-1.0.0 §2 ADD",
        quote: "If an interface of the requested name already exists in the container, the CNI plugin MUST return with an error.",
        level: Level::Must,
        ipam_level: None,
        check: refuses_existing_interface,
    },
];
