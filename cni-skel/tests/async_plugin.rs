//! An async plugin goes through the same dispatcher as a sync one.
#![cfg(feature = "async")]

use cni_skel::{AsyncPlugin, Blocking, BoxError, CheckSupport, Reply, Request, TestRequest};
use cni_types::{Code, Error, Interface, NetConf, Result100, SpecVersion};

/// Answers ADD after yielding once; DEL fails with code 11.
struct Yielding;

/// Pending once (waking itself), then ready: a future that needs the
/// executor to poll it again.
async fn yield_once() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}

impl AsyncPlugin for Yielding {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;
    // A test double: its ADD changes nothing on the host, so there is
    // nothing to verify and CHECK succeeds.
    async fn check(&self, _req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }

    async fn add(&self, req: &Request<'_, Self::Config>) -> Result<Reply, BoxError> {
        yield_once().await;
        let mut result = Result100::new(SpecVersion::V1_0_0);
        result.interfaces.push(Interface::named(req.ifname.clone()));
        Ok(result.into())
    }

    async fn del(&self, _req: &Request<'_, Self::Config>) -> Result<(), BoxError> {
        yield_once().await;
        Err(Error::new(Code::TRY_AGAIN_LATER, "agent busy").into())
    }
}

fn request(preset: TestRequest, version: &str) -> TestRequest {
    preset.stdin(format!(
        r#"{{"cniVersion":"{version}","name":"net","type":"yielding"}}"#
    ))
}

fn run(req: TestRequest) -> (i32, serde_json::Value) {
    let out = req.run(&Blocking::new(Yielding), &cni_version::PluginInfo::all());
    (out.exit_code, serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn an_async_result_is_converted_to_the_configuration_version() {
    let (status, out) = run(request(TestRequest::add(), "0.4.0"));
    assert_eq!(status, 0);
    assert_eq!(out["cniVersion"], "0.4.0");
    assert_eq!(out["interfaces"][0]["name"], "eth0");
}

#[test]
fn an_async_error_keeps_its_code() {
    let (status, out) = run(request(TestRequest::del(), "1.0.0"));
    assert_eq!((status, &out["code"]), (1, &serde_json::json!(11)));
}

#[test]
fn the_dispatchers_checks_run_before_an_async_method() {
    let (status, out) = run(request(TestRequest::add(), "9.9.9"));
    assert_eq!((status, &out["code"]), (1, &serde_json::json!(1)));
}
