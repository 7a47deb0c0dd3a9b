//! The async `agent-forward` plugin and its `agent`, both as the processes
//! a runtime would run: commands reach the agent, and a dead agent is
//! code 11 within the configured timeout.

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use tests::StdoutJson;
use tests::{plugin_bin_dir, run_plugin, RawOutput};

/// The `agent` sample process, killed and reaped on drop.
struct AgentProcess(Child);

impl AgentProcess {
    fn start(socket: &Path) -> AgentProcess {
        let child = Command::new(plugin_bin_dir().join("agent"))
            .arg(socket)
            .spawn()
            .expect("starting the agent");
        let agent = AgentProcess(child);
        let started = Instant::now();
        while !socket.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the agent never bound {socket:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        agent
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(command: &str, socket: &Path, timeout_ms: u64) -> RawOutput {
    let config = format!(
        r#"{{"cniVersion":"1.0.0","name":"n","type":"agent-forward","socket":"{}","timeoutMs":{timeout_ms}}}"#,
        socket.display()
    );
    run_plugin(
        &plugin_bin_dir().join("agent-forward"),
        &[
            ("CNI_COMMAND", command),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_NETNS", "/var/run/netns/c1"),
            ("CNI_IFNAME", "eth0"),
        ],
        config.as_bytes(),
    )
}

#[test]
fn the_plugin_process_forwards_add_check_del_to_the_agent_process() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("agent.sock");
    let _agent = AgentProcess::start(&socket);
    let added = run("ADD", &socket, 5000);
    assert!(added.success(), "{added:?}");
    assert_eq!(added.stdout_json()["interfaces"][0]["name"], "eth0");
    assert!(run("CHECK", &socket, 5000).success());
    assert!(run("DEL", &socket, 5000).success());
    // The agent forgot the attachment: CHECK now fails with its code 3.
    let checked = run("CHECK", &socket, 5000);
    assert_eq!(checked.stdout_json()["code"], 3, "{checked:?}");
}

#[test]
fn a_dead_agent_is_code_11_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let silent = dir.path().join("silent.sock");
    // Accepts every connection and never answers.
    let listener = UnixListener::bind(&silent).unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    plugin_bin_dir(); // built before the clock starts
    let started = Instant::now();
    let out = run("ADD", &silent, 300);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(out.stdout_json()["code"], 11, "{out:?}");

    let out = run("ADD", &dir.path().join("absent.sock"), 300);
    assert_eq!(out.stdout_json()["code"], 11, "{out:?}");
}
