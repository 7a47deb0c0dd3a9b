//! Executing plugins: how each way a plugin can end reaches the caller.

mod common;

use std::path::PathBuf;

use std::time::{Duration, Instant};

use cni_invoke::{exec_plugin, exec_with_result, get_version_info, Cancel, Deadline, Invocation};
use cni_skel::Command;
use cni_types::Code;

use common::{exits, script, ReadyFifo};

fn add() -> Invocation {
    Invocation {
        command: Command::Add,
        container_id: "c1".into(),
        netns: "/var/run/netns/x".into(),
        ifname: "eth0".into(),
        args: vec![
            ("K".into(), "V".into()),
            ("IgnoreUnknown".into(), "1".into()),
        ],
        path: vec!["/opt/cni/bin".into(), "/usr/lib/cni".into()],
        ..Invocation::default()
    }
}

#[test]
fn the_plugin_gets_cni_variables_and_the_config_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(
        &dir,
        "echo",
        r#"printf '%s|%s|%s|%s|%s|%s|' "$CNI_COMMAND" "$CNI_CONTAINERID" "$CNI_NETNS" "$CNI_IFNAME" "$CNI_ARGS" "$CNI_PATH"; cat"#,
    );
    let out = exec_plugin(&p, &add(), b"{\"x\":1}").unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "ADD|c1|/var/run/netns/x|eth0|K=V;IgnoreUnknown=1|/opt/cni/bin:/usr/lib/cni|{\"x\":1}"
    );
}

#[test]
fn a_cni_error_on_stdout_keeps_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(
        &dir,
        "fail",
        r#"echo '{"cniVersion":"1.0.0","code":123,"msg":"mine","details":"why"}'; exit 1"#,
    );
    let e = exec_plugin(&p, &add(), b"{}").unwrap_err();
    assert_eq!(
        (e.code, e.msg.as_str(), e.details.as_str()),
        (Code(123), "mine", "why")
    );
}

#[test]
fn a_failure_without_a_cni_error_says_what_was_printed_and_the_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(
        &dir,
        "junk",
        "echo 'not json'; echo 'on stderr' >&2; exit 3",
    );
    let e = exec_plugin(&p, &add(), b"{}").unwrap_err();
    assert_eq!(e.code, Code::INTERNAL);
    assert!(e.msg.contains("exit status 3"), "{e:?}");
    assert!(
        e.details.contains("not json") && e.details.contains("on stderr"),
        "{e:?}"
    );
}

#[test]
fn a_plugin_killed_by_a_signal_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(&dir, "killed", "kill -9 $$");
    let e = exec_plugin(&p, &add(), b"{}").unwrap_err();
    assert!(e.msg.contains("killed by signal 9"), "{e:?}");
}

#[test]
fn a_plugin_that_closes_stdout_and_ignores_stdin_does_not_hang_us() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(&dir, "closer", "exec 1>&- 0<&-; exit 0");
    // More than a pipe buffer of stdin that nobody reads.
    let big = vec![b' '; 4 << 20];
    assert_eq!(exec_plugin(&p, &add(), &big).unwrap(), b"");
}

#[test]
fn a_missing_binary_is_an_io_error_naming_it() {
    let e = exec_plugin("/nonexistent/plugin".as_ref(), &add(), b"{}").unwrap_err();
    assert_eq!(e.code, Code::IO_FAILURE);
    assert!(e.msg.contains("/nonexistent/plugin"));
}

#[test]
fn an_ipam_result_without_version_is_read_in_the_config_version() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(
        &dir,
        "ipam",
        r#"echo '{"ips":[{"address":"10.1.0.5/16","gateway":"10.1.0.1"}],"routes":[{"dst":"0.0.0.0/0"}]}'"#,
    );
    let r = exec_with_result(&p, &add(), b"{}", "0.4.0").unwrap();
    assert_eq!(r.version().to_string(), "0.4.0");
    let v: serde_json::Value = serde_json::from_slice(&r.to_json()).unwrap();
    assert_eq!(v["ips"][0]["version"], "4");
}

#[test]
fn unreadable_add_output_is_a_decoding_failure_quoting_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(&dir, "garbage", "echo '{\"ips\": 5}'");
    let e = exec_with_result(&p, &add(), b"{}", "1.0.0").unwrap_err();
    assert_eq!(e.code, Code::DECODING_FAILURE);
    assert!(e.details.contains("ips"), "{e:?}");
}

#[test]
fn version_probe_decodes_the_answer_and_treats_pre_version_plugins_as_0_1_0() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(
        &dir,
        "v",
        r#"echo '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}'"#,
    );
    assert_eq!(
        get_version_info(&p).unwrap().supported(),
        ["0.4.0", "1.0.0"]
    );
    let old = script(
        &dir,
        "old",
        r#"echo '{"code":4,"msg":"unknown CNI_COMMAND: VERSION"}'; exit 1"#,
    );
    assert_eq!(get_version_info(&old).unwrap().supported(), ["0.1.0"]);
}

#[test]
fn a_plugin_still_open_for_writing_is_run_once_it_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(&dir, "late", "echo '{}'");
    // Open for writing, the binary cannot be executed (ETXTBSY) until this
    // descriptor is closed, as while a plugin is being installed.
    let writer = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    let run = std::thread::spawn(move || exec_plugin(&p, &add(), b"{}"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(writer);
    assert_eq!(run.join().unwrap().unwrap(), b"{}\n");
}

/// The state of process `pid` ("R", "S", "Z", ...), or `None` once it is
/// gone (reaped).
fn process_state(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ...": the state follows the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .map(str::to_owned)
}

fn with_deadline(timeout: Duration) -> Invocation {
    Invocation {
        deadline: Some(Deadline::after(timeout)),
        ..add()
    }
}

/// Far below the plugins' own `sleep 300`: the deadline, not the plugin,
/// ended the run, however loaded the machine is.
const NOT_WAITED_FOR: Duration = Duration::from_secs(60);

#[test]
fn a_plugin_past_its_deadline_is_terminated_and_the_error_names_plugin_command_and_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(&dir, "hang", "exec sleep 300");
    let started = Instant::now();
    let e = exec_plugin(&p, &with_deadline(Duration::from_millis(300)), b"{}").unwrap_err();
    assert_eq!(e.code, Code::INTERNAL);
    assert!(e.msg.contains("hang"), "{e:?}");
    assert!(e.msg.contains("did not finish ADD"), "{e:?}");
    assert!(e.msg.contains("300ms deadline"), "{e:?}");
    assert!(e.msg.contains("terminated with SIGTERM"), "{e:?}");
    assert!(started.elapsed() < NOT_WAITED_FOR);
}

/// A plugin that ignores SIGTERM, starts a child, says it is ready, and
/// waits: its pid and its child's, once it is ready.
struct Stubborn {
    plugin: PathBuf,
    ready: ReadyFifo,
}

impl Stubborn {
    fn new(dir: &tempfile::TempDir) -> Stubborn {
        let ready = ReadyFifo::new(dir);
        let body = format!(
            "trap '' TERM\nsleep 300 &\necho \"$$ $!\" > {}\nwait\nwait",
            ready.path().display()
        );
        Stubborn {
            plugin: script(dir, "stubborn", &body),
            ready,
        }
    }
}

#[test]
fn a_plugin_ignoring_sigterm_is_killed_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let stubborn = Stubborn::new(&dir);
    let cancel = Cancel::new().unwrap();
    let invocation = Invocation {
        deadline: Some(Deadline::after(NOT_WAITED_FOR).or_cancelled_by(&cancel)),
        ..add()
    };
    std::thread::scope(|scope| {
        let run = scope.spawn(|| exec_plugin(&stubborn.plugin, &invocation, b"{}"));
        // Stopped only once its trap is in place, whatever the load.
        let pids = stubborn.ready.wait();
        let cancelled = Instant::now();
        cancel.cancel();
        let e = run.join().unwrap().unwrap_err();
        assert!(
            e.msg.contains("was cancelled before it finished ADD"),
            "{e:?}"
        );
        assert!(e.msg.contains("killed with SIGKILL"), "{e:?}");
        assert!(cancelled.elapsed() >= cni_invoke::KILL_GRACE);
        let pids: Vec<&str> = pids.split_whitespace().collect();
        // Nothing of the plugin is left running: the plugin itself is
        // reaped (not even a zombie), its child got the group's SIGKILL.
        assert_eq!(process_state(pids[0]), None, "the plugin was not reaped");
        assert!(
            exits(pids[1].parse().unwrap()),
            "the plugin's child is still running: {:?}",
            process_state(pids[1])
        );
    });
}

#[test]
fn a_plugin_within_its_deadline_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(&dir, "quick", "cat; echo 'and done' >&2");
    let out = exec_plugin(&p, &with_deadline(Duration::from_secs(30)), b"{\"x\":1}").unwrap();
    assert_eq!(out, b"{\"x\":1}");
}

#[test]
fn a_plugin_that_closes_its_output_and_then_hangs_is_still_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(&dir, "mute", "exec 1>&- 2>&-; sleep 300");
    let started = Instant::now();
    let e = exec_plugin(&p, &with_deadline(Duration::from_millis(200)), b"{}").unwrap_err();
    assert!(e.msg.contains("did not finish ADD"), "{e:?}");
    assert!(started.elapsed() < NOT_WAITED_FOR);
}

/// `yes` for 64 MiB on stdout, then `status`.
fn flood(dir: &tempfile::TempDir, status: i32) -> PathBuf {
    script(
        dir,
        "flood",
        &format!("yes | head -c 67108864; exit {status}"),
    )
}

#[test]
fn a_failed_plugin_flooding_stdout_gets_an_error_of_a_few_lines_saying_how_much_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let e = exec_plugin(&flood(&dir, 1), &add(), b"{}").unwrap_err();
    assert!(e.msg.contains("exit status 1"), "{e:?}");
    assert!(
        e.details.len() < 2048,
        "{} bytes of details",
        e.details.len()
    );
    // 64 MiB less the 512 characters shown ("y\ny\n...", trimmed).
    assert!(
        e.details
            .contains(&format!("({} bytes more)", (64 << 20) - 1 - 512)),
        "{}",
        e.details
    );
}

#[test]
fn an_add_result_past_the_stdout_limit_is_refused_quoting_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let e = exec_with_result(&flood(&dir, 0), &add(), b"{}", "1.0.0").unwrap_err();
    assert_eq!(e.code, Code::DECODING_FAILURE);
    assert!(
        e.details.contains("more than 1048576 bytes on stdout"),
        "{e:?}"
    );
    assert!(
        e.details.len() < 2048,
        "{} bytes of details",
        e.details.len()
    );
    assert!(e.details.contains("bytes more)"), "{}", e.details);
}

#[test]
fn a_delegate_that_writes_to_stderr_runs_from_another_thread_while_the_skel_holds_stderr() {
    // cni_skel's entry point holds the process's stderr lock on the main
    // thread; bridge and ptp run their IPAM plugin from another thread.
    let dir = tempfile::tempdir().unwrap();
    let p = script(&dir, "noisy", "echo 'a warning' >&2; echo '{}'");
    let _held = std::io::stderr().lock();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(exec_plugin(&p, &add(), b"{}").map(drop));
    });
    // A bound only to report a hang as a failure rather than hang CI.
    let ran = finished.recv_timeout(Duration::from_secs(60));
    assert!(matches!(ran, Ok(Ok(()))), "{ran:?}");
}
