//! The lifecycle of one attachment in one version, run once and read by
//! the ADD, CHECK and DEL cases: ADD, CHECK, DEL, DEL again, ADD again,
//! DEL without `prevResult`, then ADD and DEL around a namespace that is
//! removed in between.

use std::sync::Arc;

use cni_skel::Command;
use cni_types::SpecVersion;
use serde_json::Value;

use crate::call::Call;
use crate::netns;
use crate::session::Session;

pub use crate::scenarios::{Lifecycle, Links};

/// The lifecycle in `version`, run on first use.
pub fn lifecycle(s: &Session, version: &SpecVersion) -> Arc<Lifecycle> {
    let mut done = s.lifecycles.lock().unwrap_or_else(|p| p.into_inner());
    done.entry(version.clone())
        .or_insert_with(|| Arc::new(run(s, version)))
        .clone()
}

/// The one JSON object of a successful call.
pub fn result_of(call: &Call) -> Option<Value> {
    call.succeeded()
        .then(|| call.object().map(Value::Object))
        .flatten()
}

fn run(s: &Session, version: &SpecVersion) -> Lifecycle {
    let v = version.to_string();
    let id = format!("cnic-{}", v.replace('.', "-"));
    let ifname = s.target().ifname.clone();
    let with_prev = *version >= SpecVersion::V0_4_0;
    let exec = |step: &str, command: Command, config: &Value| {
        let invocation = s.invocation(command, &id, &ifname);
        s.exec(
            format!("lifecycle {v}: {step}"),
            &invocation,
            config.to_string().as_bytes(),
        )
    };

    let before = s.links();
    s.prepare_link(s.netns(), &ifname);
    let add_config = s.add_config(version, s.netns(), &ifname, 10);
    let add = exec("ADD", Command::Add, &add_config);
    let after_add = s.links();
    let result = result_of(&add);
    let prev_config = s.config(version, result.as_ref());
    let check = exec("CHECK", Command::Check, &prev_config);
    let del_config = if with_prev {
        prev_config.clone()
    } else {
        s.config(version, None)
    };
    let del = exec("DEL", Command::Del, &del_config);
    let links = match (before, after_add, s.links()) {
        (Some(before), Some(after_add), Some(after_del)) => Some(Links {
            before,
            after_add,
            after_del,
        }),
        _ => None,
    };
    let del_again = exec("DEL again", Command::Del, &del_config);
    let add_again = exec("ADD after DEL", Command::Add, &add_config);
    let del_no_prev = exec(
        "DEL without prevResult",
        Command::Del,
        &s.config(version, None),
    );
    let gone = s
        .owns_netns()
        .then(|| gone_netns(s, version, &format!("{id}-gone")))
        .flatten();
    Lifecycle {
        version: version.clone(),
        add,
        add_config,
        result,
        check,
        del,
        links,
        del_again,
        add_again,
        del_no_prev,
        gone,
    }
}

/// ADD in a namespace of its own, which is then removed, then DEL.
fn gone_netns(s: &Session, version: &SpecVersion, id: &str) -> Option<(Arc<Call>, Arc<Call>)> {
    let ns = netns::temporary().ok()?;
    let path = ns.path().to_owned();
    let ifname = s.target().ifname.clone();
    s.prepare_link(&path, &ifname);
    let mut invocation = s.invocation(Command::Add, id, &ifname);
    invocation.netns = path.display().to_string();
    let config = s.add_config(version, &path, &ifname, 11);
    let add = s.exec(
        format!("lifecycle {version}: ADD in a namespace about to go"),
        &invocation,
        config.to_string().as_bytes(),
    );
    // Removed now, with what the plugin put in it.
    drop(ns);
    let prev = result_of(&add).filter(|_| *version >= SpecVersion::V0_4_0);
    invocation.command = Command::Del;
    let del = s.exec(
        format!("lifecycle {version}: DEL after the namespace was removed"),
        &invocation,
        s.config(version, prev.as_ref()).to_string().as_bytes(),
    );
    Some((add, del))
}
