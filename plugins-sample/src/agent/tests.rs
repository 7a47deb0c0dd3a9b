//! The plugin against a real agent (on a thread, over a real socket), a
//! silent one (accepts, never answers) and none at all.

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cni_skel::{Blocking, Outcome, TestRequest};
use cni_types::Code;
use cni_version::PluginInfo;

use super::server::Agent;
use super::AgentForward;

/// A real agent serving `socket` on a thread of its own.
fn agent(socket: &Path) -> Arc<Agent> {
    let listener = UnixListener::bind(socket).unwrap();
    let agent = Arc::new(Agent::default());
    let serving = Arc::clone(&agent);
    std::thread::spawn(move || serving.serve(&listener));
    agent
}

/// An agent that accepts connections and reads them, but never answers.
fn silent_agent(socket: &Path) {
    let listener = UnixListener::bind(socket).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
}

fn run(command: &str, socket: &Path, timeout_ms: u64) -> Outcome {
    TestRequest::new(command)
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/var/run/netns/c1")
        .env("CNI_IFNAME", "eth0")
        .stdin(format!(
            r#"{{"cniVersion":"1.1.0","name":"n","type":"agent-forward","socket":"{}","timeoutMs":{timeout_ms}}}"#,
            socket.display()
        ))
        .run(&Blocking::new(AgentForward), &PluginInfo::all())
}

#[test]
fn add_check_and_del_reach_the_agent_and_add_returns_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("agent.sock");
    let agent = agent(&socket);

    let added = run("ADD", &socket, 5000);
    assert_eq!(added.exit_code, 0, "{added:?}");
    let result: serde_json::Value = serde_json::from_slice(&added.stdout).unwrap();
    assert_eq!(result["cniVersion"], "1.1.0");
    assert_eq!(result["interfaces"][0]["name"], "eth0");
    assert_eq!(result["interfaces"][0]["sandbox"], "/var/run/netns/c1");
    assert_eq!(agent.attachments(), [("c1".to_owned(), "eth0".to_owned())]);

    assert_eq!(run("CHECK", &socket, 5000).exit_code, 0);
    assert_eq!(run("DEL", &socket, 5000).exit_code, 0);
    assert!(agent.attachments().is_empty());
    // The agent's own error comes back with its code.
    let checked = run("CHECK", &socket, 5000).error().unwrap();
    assert_eq!(checked.code, Code::UNKNOWN_CONTAINER);
}

#[test]
fn an_agent_that_does_not_answer_in_time_is_code_11_naming_socket_command_and_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("silent.sock");
    silent_agent(&socket);
    let started = Instant::now();
    let err = run("ADD", &socket, 200).error().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(err.code, Code::TRY_AGAIN_LATER);
    assert!(err.msg.contains("silent.sock"), "{err:?}");
    assert!(
        err.msg.contains("did not answer ADD within 200ms"),
        "{err:?}"
    );
}

#[test]
fn no_agent_is_code_11_and_not_available_for_status() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("absent.sock");
    let err = run("DEL", &socket, 5000).error().unwrap();
    assert_eq!(err.code, Code::TRY_AGAIN_LATER);
    assert!(err.msg.contains("not reachable"), "{err:?}");
    let status = run("STATUS", &socket, 5000).error().unwrap();
    assert_eq!(status.code, Code::PLUGIN_NOT_AVAILABLE);
}
