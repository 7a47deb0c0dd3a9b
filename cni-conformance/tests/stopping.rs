//! A run that cannot finish stops cleanly: on SIGINT the tool stops the
//! plugin's process group, removes its namespace and directories, and
//! exits 130; a plugin that keeps timing out stops the run after
//! `MAX_TIMEOUTS` executions, the checks left reported as not run.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cni_conformance::{run, Kind, NetnsChoice, Selection, Status, Target, MAX_TIMEOUTS};
use cni_types::SpecVersion;
use common::{is_gone, ready_fifo, script, wait_ready};

/// What the tool left of a run, removed when dropped whatever the test
/// found: the plugin's process and any namespace named after the tool.
struct Leftovers {
    tool: u32,
    plugin: Option<i32>,
}

impl Leftovers {
    /// The namespaces under /run/netns whose name holds the tool's pid.
    fn namespaces(&self) -> Vec<PathBuf> {
        let mark = format!("-{}-", self.tool);
        std::fs::read_dir("/run/netns")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(&mark))
            .collect()
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        if let Some(pid) = self.plugin {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        }
        for ns in self.namespaces() {
            let _ = nix::mount::umount2(&ns, nix::mount::MntFlags::MNT_DETACH);
            let _ = std::fs::remove_file(&ns);
        }
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn sigint_stops_the_plugin_removes_the_namespace_and_directories_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = ready_fifo(dir.path());
    let plugin = script(
        dir.path(),
        "hang",
        &format!("echo \"$$ $(pwd)\" > {}\nexec sleep 300", fifo.display()),
    );
    let mut tool = Command::new(env!("CARGO_BIN_EXE_cni-conformance"))
        .args(["--kind", "ipam", "--versions", "1.0.0", "--timeout", "600"])
        .args(["--only", "VERSION-REPLY"])
        .arg(&plugin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut leftovers = Leftovers {
        tool: tool.id(),
        plugin: None,
    };
    let ready = wait_ready(&fifo);
    let (pid, cwd) = ready.trim().split_once(' ').unwrap();
    leftovers.plugin = Some(pid.parse().unwrap());
    let cwd = PathBuf::from(cwd);
    assert!(cwd.is_dir(), "the plugin runs in {cwd:?}");
    assert_eq!(leftovers.namespaces().len(), 1, "the run's namespace");

    let tool_pid = nix::unistd::Pid::from_raw(tool.id() as i32);
    nix::sys::signal::kill(tool_pid, nix::sys::signal::Signal::SIGINT).unwrap();
    // A bound on a broken tool, not a guess at a working one's speed.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = tool.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = tool.kill();
            panic!("the tool did not stop within two minutes of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = tool.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(status.code(), Some(130), "{stdout}");
    assert!(
        stdout.contains("stopped early: the run was cancelled"),
        "{stdout}"
    );
    assert!(is_gone(leftovers.plugin.unwrap()), "the plugin still runs");
    assert_eq!(leftovers.namespaces(), Vec::<PathBuf>::new());
    assert!(!cwd.exists(), "{cwd:?} is left");
}

#[test]
fn a_plugin_that_keeps_timing_out_stops_the_run_and_the_checks_left_are_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let plugin = script(
        dir.path(),
        "hang",
        &format!("echo >> {}\nexec sleep 300", started.display()),
    );
    let mut target = Target::new(&plugin, Kind::Ipam);
    target.netns = NetnsChoice::Path("/nonexistent/netns".into());
    target.versions = Some(vec![SpecVersion::V1_0_0]);
    target.timeout = Duration::from_millis(200);
    let report = run(&target, &Selection::all()).unwrap();

    let stopped = report.stopped.clone().unwrap_or_default();
    assert!(
        stopped.contains(&format!(
            "{MAX_TIMEOUTS} executions of the plugin timed out"
        )),
        "{}",
        report.text()
    );
    // Killed before it wrote its line, an execution is not counted here:
    // never more than the limit ran.
    let executions = std::fs::read_to_string(&started)
        .unwrap_or_default()
        .lines()
        .count();
    assert!(executions <= MAX_TIMEOUTS, "{executions} executions");
    let last = report.outcomes.last().unwrap();
    assert_eq!(last.status, Status::Failed);
    assert!(last.reason.starts_with("not run: "), "{}", last.reason);
}
