//! The caller's trace context on `Request`.

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, TestRequest};
use cni_types::{NetConf, Result100, SpecVersion};

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Logs the trace id, state and baggage it was called with.
struct LogsTrace;

impl Plugin for LogsTrace {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;
    // A test double: its ADD changes nothing on the host, so there is
    // nothing to verify and CHECK succeeds.
    fn check(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let trace = &req.trace;
        req.log(format_args!(
            "{:?} {:?} {:?}",
            trace.parent().map(|p| p.trace_id()),
            trace.state(),
            trace.baggage()
        ));
        Ok(Result100::new(SpecVersion::V1_0_0).into())
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
}

fn add() -> TestRequest {
    TestRequest::add().stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"t"}"#)
}

fn logged(req: TestRequest) -> String {
    let out = req.run(&LogsTrace, &cni_version::PluginInfo::all());
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn a_plugin_reads_the_runtimes_trace_context_from_its_request() {
    let req = add()
        .env("TRACEPARENT", PARENT)
        .env("TRACESTATE", "congo=t61rcWkgMzE")
        .env("BAGGAGE", "tenant=blue");
    assert_eq!(
        logged(req),
        "Some(\"4bf92f3577b34da6a3ce929d0e0e4736\") Some(\"congo=t61rcWkgMzE\") Some(\"tenant=blue\")\n"
    );
}

#[test]
fn without_a_trace_context_the_request_has_none() {
    assert_eq!(logged(add()), "None None None\n");
}
