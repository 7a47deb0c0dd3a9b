//! Executing plugins: how each way a plugin can end reaches the caller.

mod common;

use std::path::PathBuf;

use std::time::{Duration, Instant};

use cni_invoke::{exec_plugin, exec_with_result, get_version_info, Deadline, Invocation};
use cni_types::Code;

use common::script;

fn add() -> Invocation {
    Invocation {
        command: "ADD".into(),
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

/// A plugin that records its pid and its child's in `pids`, then hangs.
fn hanging(dir: &tempfile::TempDir, name: &str, prelude: &str) -> (PathBuf, PathBuf) {
    let pids = dir.path().join(format!("{name}.pids"));
    let body = format!(
        "{prelude}\nsleep 300 &\necho \"$$ $!\" > {}\nwait\nwait",
        pids.display()
    );
    (script(dir, name, &body), pids)
}

fn with_deadline(timeout: Duration) -> Invocation {
    Invocation {
        deadline: Some(Deadline::after(timeout)),
        ..add()
    }
}

/// Runs a hanging plugin to its deadline; the error and the plugin's and
/// its child's pids.
fn run_past_deadline(prelude: &str) -> (cni_types::Error, Duration, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let (p, pids) = hanging(&dir, "hang", prelude);
    let started = Instant::now();
    let e = exec_plugin(&p, &with_deadline(Duration::from_millis(300)), b"{}").unwrap_err();
    let took = started.elapsed();
    let pids = std::fs::read_to_string(pids).unwrap();
    (
        e,
        took,
        pids.split_whitespace().map(str::to_owned).collect(),
    )
}

/// Nothing of the plugin is left running: the plugin itself is reaped
/// (not even a zombie), its child is gone or a zombie awaiting init.
fn assert_nothing_left(pids: &[String]) {
    assert_eq!(process_state(&pids[0]), None, "the plugin was not reaped");
    let child = process_state(&pids[1]);
    assert!(
        child.is_none() || child.as_deref() == Some("Z"),
        "the plugin's child is still running: {child:?}"
    );
}

#[test]
fn a_plugin_past_its_deadline_is_terminated_and_the_error_names_plugin_command_and_deadline() {
    let (e, took, pids) = run_past_deadline("");
    assert_eq!(e.code, Code::INTERNAL);
    assert!(e.msg.contains("hang"), "{e:?}");
    assert!(e.msg.contains("did not finish ADD"), "{e:?}");
    assert!(e.msg.contains("300ms deadline"), "{e:?}");
    assert!(e.msg.contains("terminated with SIGTERM"), "{e:?}");
    assert!(took < Duration::from_millis(1000), "took {took:?}");
    assert_nothing_left(&pids);
}

#[test]
fn a_plugin_ignoring_sigterm_is_killed_after_the_grace_period() {
    let (e, took, pids) = run_past_deadline("trap '' TERM");
    assert!(e.msg.contains("killed with SIGKILL"), "{e:?}");
    assert!(
        took >= Duration::from_millis(300) + cni_invoke::KILL_GRACE,
        "took {took:?}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_nothing_left(&pids);
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
    assert!(started.elapsed() < Duration::from_secs(2));
}
