//! Trace context: a caller's `TRACEPARENT`, `TRACESTATE` and `BAGGAGE`
//! reach the plugins it runs, and a plugin's reach its delegates.

mod common;

use std::path::{Path, PathBuf};

use cni_invoke::{exec_plugin, Invocation};
use cni_skel::{
    BoxError, CheckSupport, Command, Plugin, Reply, Request, TestRequest, TraceContext, TraceParent,
};
use cni_types::NetConf;
use common::{attachment, script};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A plugin that writes the trace variables it was given to `seen` and
/// answers an empty 1.0.0 result.
fn recorder(dir: &Path) -> (PathBuf, PathBuf) {
    let seen = dir.join("seen");
    let body = format!(
        "cat >/dev/null\nprintf '%s|%s|%s' \"${{TRACEPARENT-unset}}\" \"${{TRACESTATE-unset}}\" \"${{BAGGAGE-unset}}\" > {}\necho '{{\"cniVersion\":\"1.0.0\"}}'",
        seen.display()
    );
    (script(dir, "record", &body), seen)
}

fn caller_trace() -> TraceContext {
    TraceContext::with_parent(TraceParent::parse(PARENT).unwrap())
        .with_state("congo=t61rcWkgMzE")
        .with_baggage("tenant=blue")
}

#[test]
fn an_invocation_passes_its_trace_context_to_the_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let (plugin, seen) = recorder(dir.path());
    let invocation = Invocation {
        command: Command::Add,
        trace: caller_trace(),
        ..Invocation::default()
    };
    exec_plugin(&plugin, &invocation, b"{}").unwrap();
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        format!("{PARENT}|congo=t61rcWkgMzE|tenant=blue")
    );

    // Without one, the plugin gets none (ours is never inherited).
    exec_plugin(&plugin, &Invocation::default(), b"{}").unwrap();
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "unset|unset|unset");
}

/// A plugin that delegates ADD to `record`.
struct Delegating;

impl Plugin for Delegating {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;
    // A test double: its ADD changes nothing on the host, so there is
    // nothing to verify and CHECK succeeds.
    fn check(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        Ok(cni_invoke::delegate_add("record", req)?.into())
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
}

#[test]
fn a_delegating_plugin_passes_its_own_trace_context_to_the_delegate() {
    let dir = tempfile::tempdir().unwrap();
    let (_, seen) = recorder(dir.path());
    let out = TestRequest::new("ADD")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/var/run/netns/none")
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", dir.path())
        .env("TRACEPARENT", PARENT)
        .env("BAGGAGE", "tenant=blue")
        .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"delegating"}"#)
        .run(&Delegating, &cni_version::PluginInfo::all());
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        format!("{PARENT}|unset|tenant=blue")
    );
}

#[test]
fn a_runtime_passes_its_trace_context_to_every_operation() {
    use cni_invoke::{NetworkList, Runtime};
    let dir = tempfile::tempdir().unwrap();
    let (_, seen) = recorder(dir.path());
    let list = r#"{"cniVersion":"1.1.0","name":"traced","plugins":[{"type":"record"}]}"#;
    let net = NetworkList::from_bytes(list.as_bytes()).unwrap();
    let runtime =
        Runtime::new(vec![dir.path().into()], dir.path().join("cache")).with_trace(caller_trace());
    let expected = format!("{PARENT}|congo=t61rcWkgMzE|tenant=blue");
    runtime.add(&net, &attachment()).unwrap();
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), expected);
    std::fs::remove_file(&seen).unwrap();
    // STATUS has no attachment, and still carries the caller's span.
    runtime.status(&net).unwrap();
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), expected);
}
