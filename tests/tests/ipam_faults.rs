//! `ipam-file` under faults: processes killed (SIGKILL) at arbitrary points
//! of an ADD must leave the store consistent: every reservation whole or
//! absent, no lock held, and the next ADD working. And the store's other
//! faults, each run against the binary: a lock held by a stuck process, an
//! entry DEL cannot read, a read-only store, a relative `dataDir`.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tests::{plugin_bin_dir, run_plugin, RawOutput, StdoutJson, FAKE_NETNS};

const NETWORK: &str = "faults";

fn config(data_dir: &Path) -> Vec<u8> {
    serde_json::json!({
        "cniVersion": "1.0.0", "name": NETWORK, "type": "ipam-file",
        "ipam": {"type": "ipam-file", "dataDir": data_dir, "ranges": [[{"subnet": "10.77.0.0/16"}]]}
    })
    .to_string()
    .into_bytes()
}

fn env<'a>(command: &'a str, id: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", id),
        ("CNI_NETNS", FAKE_NETNS),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/nonexistent"),
    ]
}

/// Starts an ADD and kills it with SIGKILL after `delay` (it may well have
/// finished by then; that is one of the points tested too).
fn add_killed_after(bin: &Path, conf: &[u8], id: &str, delay: Duration) {
    let mut child = Command::new(bin)
        .env_clear()
        .envs(env("ADD", id))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting ipam-file");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(conf);
    }
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
}

/// The store's reservations; panics on anything that is not a whole
/// reservation of one of `ids` or the allocator's own bookkeeping (a
/// leftover temporary file is allowed only when `allow_temporaries`).
fn check_store(dir: &Path, ids: &BTreeSet<String>, allow_temporaries: bool) -> BTreeSet<IpAddr> {
    let mut held = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return held;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "lock" || name.starts_with("last_reserved_ip.") {
            continue;
        }
        if name.starts_with(".ipam-file-tmp.") {
            assert!(
                allow_temporaries,
                "temporary file {name} left after a later run"
            );
            continue;
        }
        let ip: IpAddr = name
            .parse()
            .unwrap_or_else(|_| panic!("unexpected file {name} in the store"));
        let content = std::fs::read_to_string(entry.path()).unwrap();
        let (id, ifname) = content
            .split_once("\r\n")
            .unwrap_or_else(|| panic!("torn reservation {name}: {content:?}"));
        assert!(
            ids.contains(id) && ifname == "eth0",
            "reservation {name} holds {content:?}"
        );
        held.insert(ip);
    }
    held
}

#[test]
fn adds_killed_at_random_points_leave_a_consistent_store() {
    let bin = plugin_bin_dir().join("ipam-file");
    let tmp = tempfile::tempdir().unwrap();
    let conf = config(tmp.path());
    let store: PathBuf = tmp.path().join(NETWORK);
    let mut ids = BTreeSet::new();
    // A small deterministic generator: the same delays every run, spread
    // from "before exec" to "after the write" of a ~1 ms process.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..100 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let delay = Duration::from_micros(state % 3000);
        let id = format!("killed-{i}");
        ids.insert(id.clone());
        add_killed_after(&bin, &conf, &id, delay);
        check_store(&store, &ids, true);
        if i % 10 == 9 {
            // The next ADD works: no stale lock, no corrupt state.
            let id = format!("alive-{i}");
            ids.insert(id.clone());
            let out = run_plugin(&bin, &env("ADD", &id), &conf);
            assert_eq!(out.status(), Some(0), "ADD after kills failed: {out:?}");
        }
    }
    // A last ADD cleans up temporaries and sees every whole reservation.
    ids.insert("last".into());
    let out = run_plugin(&bin, &env("ADD", "last"), &conf);
    assert_eq!(out.status(), Some(0), "{out:?}");
    let held = check_store(&store, &ids, false);
    assert!(
        held.len() >= 11,
        "the 11 uninterrupted ADDs hold addresses: {held:?}"
    );
    // Each held address is released by its owner's DEL.
    for id in &ids {
        let out = run_plugin(&bin, &env("DEL", id), &conf);
        assert_eq!(out.status(), Some(0), "DEL {id}: {out:?}");
    }
    assert!(check_store(&store, &ids, false).is_empty());
}

/// An ADD of `id`, as the runtime runs it.
fn add(conf: &[u8], id: &str) -> RawOutput {
    run_plugin(&plugin_bin_dir().join("ipam-file"), &env("ADD", id), conf)
}

/// How a test runs the plugin: where, as whom, in what mount namespace.
#[derive(Default)]
struct Setup<'a> {
    /// The working directory.
    cwd: Option<&'a Path>,
    /// Run as this uid and gid (with no supplementary groups).
    run_as: Option<u32>,
    /// Bind-mount this directory read-only onto itself in a mount namespace
    /// of the plugin's own (gone when it exits).
    read_only: Option<&'a Path>,
}

/// ipam-file run with `setup`, killed if it takes longer than `bound`.
fn run_with(setup: &Setup, command: &str, id: &str, conf: &[u8], bound: Duration) -> RawOutput {
    let mut cmd = Command::new(plugin_bin_dir().join("ipam-file"));
    cmd.env_clear().envs(env(command, id));
    if let Some(dir) = setup.cwd {
        cmd.current_dir(dir);
    }
    let read_only = setup
        .read_only
        .map(|d| CString::new(d.as_os_str().as_encoded_bytes()).unwrap());
    let run_as = setup.run_as;
    // SAFETY: only async-signal-safe calls (unshare, mount, setgroups,
    // setgid, setuid) between fork and exec, on values made before.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            if let Some(dir) = &read_only {
                let none = std::ptr::null();
                let private = libc::MS_REC | libc::MS_PRIVATE;
                let ro = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY;
                if libc::unshare(libc::CLONE_NEWNS) != 0
                    || libc::mount(none, c"/".as_ptr(), none, private, std::ptr::null()) != 0
                    || libc::mount(
                        dir.as_ptr(),
                        dir.as_ptr(),
                        none,
                        libc::MS_BIND,
                        std::ptr::null(),
                    ) != 0
                    || libc::mount(none, dir.as_ptr(), none, ro, std::ptr::null()) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(id) = run_as {
                tests::become_user(id)?;
            }
            Ok(())
        });
    }
    // A deadline: the point of one test is a plugin that may never exit.
    cni_invoke::exec_raw(&mut cmd, conf, Some(cni_invoke::Deadline::after(bound)))
        .expect("running ipam-file")
}

/// The error ipam-file printed: `(code, msg, details)`.
fn error(out: &RawOutput) -> (u64, String, String) {
    let e = out.stdout_json();
    let text = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
    (
        e["code"].as_u64().unwrap_or_default(),
        text("msg"),
        text("details"),
    )
}

#[test]
fn a_lock_held_by_a_stuck_process_fails_the_add_with_code_11_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = config(tmp.path());
    let store = tmp.path().join(NETWORK);
    assert!(add(&conf, "c1").success());
    // This test is the stuck holder.
    let lock = std::fs::File::open(store.join("lock")).unwrap();
    // SAFETY: flock on a file this test owns.
    #[allow(unsafe_code)]
    let locked = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(locked, 0);
    let started = Instant::now();
    let out = run_with(
        &Setup::default(),
        "ADD",
        "c2",
        &conf,
        Duration::from_secs(30),
    );
    let took = started.elapsed();
    let (code, msg, _) = error(&out);
    assert_eq!(code, 11, "{out:?}");
    assert!(
        msg.contains(&store.join("lock").display().to_string()),
        "{msg}"
    );
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(20),
        "LOCK_TIMEOUT is 10 s, took {took:?}"
    );
    drop(lock);
    assert!(add(&conf, "c2").success());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn del_fails_naming_an_entry_it_cannot_read_and_releases_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = config(tmp.path());
    let store = tmp.path().join(NETWORK);
    assert!(add(&conf, "c1").success());
    // A reservation nobody but root can read (it is c2's, but who knows),
    // and a lock anyone can open.
    let hidden = store.join("10.77.0.9");
    std::fs::write(&hidden, "c2\r\neth0").unwrap();
    std::fs::set_permissions(&hidden, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(store.join("lock"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = check_store(&store, &["c1".into(), "c2".into()].into(), false);

    let nobody = Setup {
        run_as: Some(65534),
        ..Setup::default()
    };
    let out = run_with(&nobody, "DEL", "c2", &conf, Duration::from_secs(30));
    let (code, msg, _) = error(&out);
    assert_eq!(code, 5, "{out:?}");
    assert!(msg.contains(&hidden.display().to_string()), "{msg}");
    assert_eq!(
        check_store(&store, &["c1".into(), "c2".into()].into(), false),
        before
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn check_and_status_read_a_read_only_store() {
    let tmp = tempfile::tempdir().unwrap();
    let mut conf: serde_json::Value = serde_json::from_slice(&config(tmp.path())).unwrap();
    conf["cniVersion"] = json!("1.1.0");
    let conf = serde_json::to_vec(&conf).unwrap();
    let bin = plugin_bin_dir().join("ipam-file");
    assert!(run_plugin(&bin, &env("ADD", "c1"), &conf).success());
    let read_only = Setup {
        read_only: Some(tmp.path()),
        ..Setup::default()
    };
    let check = run_with(&read_only, "CHECK", "c1", &conf, Duration::from_secs(30));
    assert!(check.success(), "{check:?}");
    let status = run_with(&read_only, "STATUS", "", &conf, Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
    // A change is refused, naming the store, and CHECK still reads it.
    let add = run_with(&read_only, "ADD", "c2", &conf, Duration::from_secs(30));
    assert_eq!(error(&add).0, 5, "{add:?}");
    let missing = run_with(&read_only, "CHECK", "c2", &conf, Duration::from_secs(30));
    assert_eq!(error(&missing).0, 103, "{missing:?}");
}

#[test]
fn a_relative_data_dir_is_refused_in_any_working_directory() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let conf = serde_json::to_vec(&json!({
        "cniVersion": "1.0.0", "name": NETWORK, "type": "ipam-file",
        "ipam": {"type": "ipam-file", "dataDir": "ipam-data", "ranges": [[{"subnet": "10.77.0.0/16"}]]}
    }))
    .unwrap();
    for cwd in [a.path(), b.path()] {
        let here = Setup {
            cwd: Some(cwd),
            ..Setup::default()
        };
        let out = run_with(&here, "ADD", "c1", &conf, Duration::from_secs(30));
        let (code, msg, details) = error(&out);
        assert_eq!((code, msg.as_str()), (7, "invalid ipam.dataDir"), "{out:?}");
        assert!(details.contains("\"ipam-data\""), "{details}");
        assert!(!cwd.join("ipam-data").exists());
    }
}
