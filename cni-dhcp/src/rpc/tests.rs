//! The protocol against bytes Go's `net/rpc` wrote (see
//! `fixtures/README.md` for where each file comes from).

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};

use serde_json::json;

use super::*;

const V111_ALLOCATE: (&[u8], &[u8]) = (
    include_bytes!("fixtures/v111-allocate.client"),
    include_bytes!("fixtures/v111-allocate.server"),
);
const V19_ALLOCATE: (&[u8], &[u8]) = (
    include_bytes!("fixtures/v19-allocate.client"),
    include_bytes!("fixtures/v19-allocate.server"),
);
const V111_RELEASE: &[u8] = include_bytes!("fixtures/v111-release.server");
const V111_EXHAUSTED: &[u8] = include_bytes!("fixtures/v111-exhausted.server");
const V111_UNKNOWN: &[u8] = include_bytes!("fixtures/v111-unknown-method.server");

const CONF: &str =
    r#"{"cniVersion":"1.0.0","name":"dhcpnet","type":"macvlan","ipam":{"type":"dhcp"}}"#;

/// The arguments every fixture's client sent.
fn fixture_args() -> CmdArgs {
    CmdArgs {
        container_id: "c1".into(),
        netns: "/run/netns/c1".into(),
        ifname: "eth0".into(),
        args: "K8S_POD_NAME=web-0".into(),
        path: "/opt/cni/bin".into(),
        netns_override: String::new(),
        stdin_data: CONF.as_bytes().to_vec(),
    }
}

/// The result the fixtures' v1.9 daemon returned.
fn v19_result() -> serde_json::Value {
    json!({"cniVersion": "1.0.0",
        "ips": [{"address": "10.77.0.23/24", "gateway": "10.77.0.1"}],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.77.0.1", "priority": 100},
                   {"dst": "192.168.7.0/24", "priority": 100, "scope": 253}]})
}

/// Runs our server on what a Go client sent; returns what it answered
/// and the calls it saw.
fn serve_bytes(
    client: &[u8],
    answer: impl Fn(&str) -> Answer,
) -> (Vec<u8>, Vec<(String, CmdArgs)>) {
    let (mut plugin, daemon) = UnixStream::pair().unwrap();
    plugin.write_all(client).unwrap();
    plugin.shutdown(std::net::Shutdown::Write).unwrap();
    let mut calls = Vec::new();
    serve(daemon, READ_DEADLINE, |method, args, _| {
        calls.push((method.to_string(), args));
        answer(method)
    })
    .unwrap();
    let mut out = Vec::new();
    plugin.read_to_end(&mut out).unwrap();
    (out, calls)
}

/// Runs our client against a server that answers with `server` bytes;
/// returns the outcome and what the client sent.
fn call_bytes(server: &'static [u8], method: &str) -> (Result<Value, CallError>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dhcp.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let peer = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.write_all(server).unwrap();
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        let mut sent = Vec::new();
        stream.read_to_end(&mut sent).unwrap();
        sent
    });
    let outcome = call(&path, method, &fixture_args());
    (outcome, peer.join().unwrap())
}

#[test]
fn a_reference_plugins_call_is_read_with_every_argument() {
    for client in [V111_ALLOCATE.0, V19_ALLOCATE.0] {
        let (_, calls) = serve_bytes(client, |_| Err("no more tries".into()));
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].0, "DHCP.Allocate");
        assert_eq!(calls[0].1, fixture_args());
    }
}

#[test]
fn our_answer_to_allocate_is_byte_for_byte_the_v1_9_daemons() {
    let (out, _) = serve_bytes(V19_ALLOCATE.0, |_| {
        Ok((&RESULT, result_to_value(&v19_result()).unwrap()))
    });
    assert_eq!(out, V19_ALLOCATE.1);
}

#[test]
fn our_call_is_byte_for_byte_the_v1_9_plugins() {
    let (outcome, sent) = call_bytes(V19_ALLOCATE.1, "DHCP.Allocate");
    assert_eq!(sent, V19_ALLOCATE.0);
    let result = result_from_value(&outcome.unwrap()).unwrap();
    assert_eq!(result, v19_result());
}

#[test]
fn a_reference_daemons_answers_are_read() {
    let (outcome, _) = call_bytes(V111_ALLOCATE.1, "DHCP.Allocate");
    assert_eq!(
        result_from_value(&outcome.unwrap()).unwrap(),
        json!({"cniVersion": "1.0.0",
            "ips": [{"address": "10.77.0.23/24", "gateway": "10.77.0.1"}],
            "routes": [{"dst": "0.0.0.0/0", "gw": "10.77.0.1"}]})
    );
    let (outcome, _) = call_bytes(V111_RELEASE, "DHCP.Release");
    assert_eq!(outcome.unwrap(), Value::Struct(Vec::new()));
}

#[test]
fn a_daemons_error_reads_as_the_reference_plugin_shows_it() {
    let (outcome, _) = call_bytes(V111_EXHAUSTED, "DHCP.Allocate");
    let err = outcome.unwrap_err();
    assert_eq!(
        err.to_string(),
        "error calling DHCP.Allocate: no more tries"
    );
    assert!(!err.is_unknown_method());
    let (outcome, _) = call_bytes(V111_UNKNOWN, "DHCP.Status");
    assert!(outcome.unwrap_err().is_unknown_method());
}

#[test]
fn our_errors_are_byte_for_byte_the_reference_daemons() {
    let client = include_bytes!("fixtures/v111-exhausted.client");
    let (out, _) = serve_bytes(client, |_| Err("no more tries".into()));
    assert_eq!(out, V111_EXHAUSTED);
    let client = include_bytes!("fixtures/v111-release.client");
    let (out, _) = serve_bytes(client, |_| Ok((&EMPTY, Value::Struct(Vec::new()))));
    assert_eq!(out, V111_RELEASE);
}

#[test]
fn a_method_the_daemon_does_not_serve_is_answered_as_go_does() {
    let client = include_bytes!("fixtures/v111-unknown-method.client");
    let (out, _) = serve_bytes(client, |m| Err(format!("rpc: can't find method {m}")));
    assert_eq!(out, V111_UNKNOWN);
}

#[test]
fn anything_but_connect_is_refused_as_go_does() {
    let (out, calls) = serve_bytes(b"GET /_goRPC_ HTTP/1.0\r\n\r\n", |_| unreachable!());
    assert!(calls.is_empty());
    assert!(
        out.starts_with(b"HTTP/1.0 405 Method Not Allowed\r\n"),
        "{out:?}"
    );
}

#[test]
fn a_plugin_that_sends_nothing_is_hung_up_on_after_the_read_deadline() {
    let (_plugin, daemon) = UnixStream::pair().unwrap();
    let deadline = std::time::Duration::from_millis(200);
    let started = std::time::Instant::now();
    let outcome = serve(daemon, deadline, |_, _, _| unreachable!());
    assert!(outcome.is_err());
    assert!(started.elapsed() >= deadline);
    assert!(started.elapsed() < deadline * 10);
}

#[test]
fn without_a_daemon_the_error_names_the_socket_as_the_reference_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.sock");
    let err = call(&path, "DHCP.Allocate", &fixture_args()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "error dialing DHCP daemon: dial-http unix {}",
            path.display()
        )),
        "{msg}"
    );
}
