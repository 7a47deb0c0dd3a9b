//! `ipam-file` under faults: processes killed (SIGKILL) at arbitrary points
//! of an ADD must leave the store consistent: every reservation whole or
//! absent, no lock held, and the next ADD working.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use tests::{plugin_bin_dir, run_plugin, FAKE_NETNS};

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
