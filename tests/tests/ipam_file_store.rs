//! `ipam-file` as a process against stores a user can really have: GC in
//! its three states over reservations of several containers (one written
//! by an older host-local), and a data directory holding entries no plugin
//! wrote.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tests::StdoutJson;
use tests::{plugin_bin_dir, run_plugin, RawOutput, FAKE_NETNS};

const NETWORK: &str = "net";

/// A data directory and the configuration of one /24 in it.
struct Store {
    data: tempfile::TempDir,
}

impl Store {
    fn new() -> Store {
        Store {
            data: tempfile::tempdir().expect("temporary directory"),
        }
    }

    fn dir(&self) -> PathBuf {
        self.data.path().join(NETWORK)
    }

    /// The configuration; `valid` set as `cni.dev/valid-attachments` unless
    /// `None` (then the key is absent).
    fn conf(&self, valid: Option<Value>) -> Vec<u8> {
        let mut c = json!({"cniVersion": "1.1.0", "name": NETWORK, "type": "bridge",
            "ipam": {"type": "ipam-file", "dataDir": self.data.path(),
                     "ranges": [[{"subnet": "10.60.0.0/24"}]]}});
        if let Some(valid) = valid {
            c["cni.dev/valid-attachments"] = valid;
        }
        serde_json::to_vec(&c).expect("serialisable")
    }

    fn run(&self, cmd: &str, id: &str, ifname: &str, valid: Option<Value>) -> RawOutput {
        let mut env = vec![("CNI_COMMAND", cmd), ("CNI_PATH", "/usr/lib/cni")];
        if !matches!(cmd, "GC" | "STATUS") {
            env.extend([
                ("CNI_CONTAINERID", id),
                ("CNI_IFNAME", ifname),
                ("CNI_NETNS", FAKE_NETNS),
            ]);
        }
        let bin = plugin_bin_dir().join("ipam-file");
        let out = run_plugin(&bin, &env, &self.conf(valid));
        assert!(out.success(), "{cmd} {id} {ifname}: {out:?}");
        out
    }

    fn add(&self, id: &str, ifname: &str) -> String {
        let out = self.run("ADD", id, ifname, None);
        out.stdout_json()["ips"][0]["address"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// `name -> (inode, content)` of every entry, links not followed.
    fn entries(&self) -> BTreeMap<String, (u64, String)> {
        fs::read_dir(self.dir())
            .expect("store directory")
            .flatten()
            .map(|e| {
                let meta = fs::symlink_metadata(e.path()).expect("metadata");
                let content = if meta.is_file() {
                    String::from_utf8_lossy(&fs::read(e.path()).expect("read")).into_owned()
                } else {
                    String::new()
                };
                (
                    e.file_name().to_string_lossy().into_owned(),
                    (meta.ino(), content),
                )
            })
            .collect()
    }

    fn names(&self) -> Vec<String> {
        self.entries().into_keys().collect()
    }
}

/// c1/eth0 .2, c2/eth0 .3, c3/net1 .4, and `old` .9 written by an older
/// host-local (container id only).
fn several_containers() -> Store {
    let store = Store::new();
    assert_eq!(store.add("c1", "eth0"), "10.60.0.2/24");
    assert_eq!(store.add("c2", "eth0"), "10.60.0.3/24");
    assert_eq!(store.add("c3", "net1"), "10.60.0.4/24");
    fs::write(store.dir().join("10.60.0.9"), "old").expect("write");
    store
}

#[test]
fn gc_releases_exactly_what_is_not_valid_in_each_of_its_three_states() {
    let c = |id: &str, ifname: &str| json!({"containerID": id, "ifname": ifname});
    let bookkeeping = ["last_reserved_ip.0", "lock"];
    for (valid, remain) in [
        (
            None,
            vec!["10.60.0.2", "10.60.0.3", "10.60.0.4", "10.60.0.9"],
        ),
        // libcni's empty list.
        (Some(Value::Null), vec![]),
        (Some(json!([])), vec![]),
        (
            Some(json!([c("c1", "eth0"), c("c3", "eth0"), c("old", "eth7")])),
            vec!["10.60.0.2", "10.60.0.9"],
        ),
    ] {
        let store = several_containers();
        let before = store.entries();
        let out = store.run("GC", "", "", valid.clone());
        let mut want: Vec<String> = remain.iter().map(|s| (*s).to_owned()).collect();
        want.extend(bookkeeping.map(str::to_owned));
        assert_eq!(store.names(), want, "GC with {valid:?}");
        // The lock and last reserved files are the very same files.
        for name in bookkeeping {
            assert_eq!(
                store.entries()[name],
                before[name],
                "{name} after {valid:?}"
            );
        }
        if valid.is_none() {
            assert!(
                out.stderr_str().contains("nothing is released"),
                "{valid:?}: {out:?}"
            );
        }
    }
}

#[test]
fn a_store_holding_what_no_plugin_wrote_keeps_add_del_gc_working() {
    let store = Store::new();
    let dir = store.dir();
    fs::create_dir_all(&dir).expect("mkdir");
    let outside = store.data.path().join("outside-the-store");
    fs::write(&outside, "victim\r\neth0").expect("write");
    fs::create_dir(dir.join("10.60.0.2")).expect("mkdir");
    fs::write(dir.join("10.60.0.3"), b"\x00\xff\xfe binary\n\x01").expect("write");
    std::os::unix::fs::symlink(&outside, dir.join("10.60.0.4")).expect("symlink");
    fs::write(dir.join("10.60.0.5"), "stray\nfile\nwith\nlines").expect("write");
    fs::write(dir.join("last_reserved_ip.0"), "\u{feff}garbage").expect("write");

    let out = store.run("ADD", "victim", "eth0", None);
    assert_eq!(out.stdout_json()["ips"][0]["address"], "10.60.0.6/24");
    let stderr = out.stderr_str();
    for named in [
        "10.60.0.2",
        "10.60.0.3",
        "10.60.0.4",
        "10.60.0.5",
        "last_reserved_ip.0",
    ] {
        assert!(
            stderr.contains(&format!("{}", Path::new(&dir).join(named).display())),
            "{named} not named on stderr: {stderr}"
        );
    }
    assert_eq!(store.add("c2", "eth0"), "10.60.0.7/24");
    store.run("DEL", "victim", "eth0", None);
    store.run("GC", "", "", Some(json!([])));
    assert_eq!(
        store.names(),
        [
            "10.60.0.2",
            "10.60.0.3",
            "10.60.0.4",
            "10.60.0.5",
            "last_reserved_ip.0",
            "lock"
        ]
    );
    // The link was never followed: the file outside is as it was, and the
    // link is still a link.
    assert_eq!(
        fs::read_to_string(&outside).expect("read"),
        "victim\r\neth0"
    );
    assert!(fs::symlink_metadata(dir.join("10.60.0.4"))
        .expect("link")
        .file_type()
        .is_symlink());
    // STATUS still answers: the range is far from exhausted.
    store.run("STATUS", "", "", None);
}

#[test]
fn the_last_address_handed_out_is_rewritten_in_place_and_a_torn_one_restarts_the_search() {
    let store = Store::new();
    assert_eq!(store.add("c1", "eth0"), "10.60.0.2/24");
    let first = store.entries()["last_reserved_ip.0"].clone();
    assert_eq!(first.1, "10.60.0.2");
    assert_eq!(store.add("c2", "eth0"), "10.60.0.3/24");
    let second = store.entries()["last_reserved_ip.0"].clone();
    // The same file (as host-local's os.WriteFile): no new inode per ADD.
    assert_eq!(second, (first.0, "10.60.0.3".to_owned()));

    // A plugin killed between writing a shorter address over a longer
    // one and cutting the file leaves it garbled: the next ADD names it
    // and searches from the range's start.
    fs::write(store.dir().join("last_reserved_ip.0"), "10.60.0.990").expect("write");
    store.run("DEL", "c1", "eth0", None);
    let out = store.run("ADD", "c3", "eth0", None);
    assert_eq!(out.stdout_json()["ips"][0]["address"], "10.60.0.2/24");
    assert!(
        out.stderr_str().contains("last_reserved_ip.0"),
        "{}",
        out.stderr_str()
    );
    assert_eq!(store.entries()["last_reserved_ip.0"].1, "10.60.0.2");

    // A shorter address over a longer one: cut to its length.
    fs::write(store.dir().join("last_reserved_ip.0"), "10.60.0.254").expect("write");
    store.run("DEL", "c2", "eth0", None);
    assert_eq!(store.add("c4", "eth0"), "10.60.0.3/24");
    assert_eq!(store.entries()["last_reserved_ip.0"].1, "10.60.0.3");
}

#[test]
fn a_link_in_place_of_the_last_address_file_is_not_followed() {
    let store = Store::new();
    fs::create_dir_all(store.dir()).expect("mkdir");
    let outside = store.data.path().join("outside-the-store");
    fs::write(&outside, "untouched").expect("write");
    std::os::unix::fs::symlink(&outside, store.dir().join("last_reserved_ip.0")).expect("link");
    // The hint cannot be written; the ADD still succeeds.
    assert_eq!(store.add("c1", "eth0"), "10.60.0.2/24");
    assert_eq!(fs::read_to_string(&outside).expect("read"), "untouched");
    assert!(fs::symlink_metadata(store.dir().join("last_reserved_ip.0"))
        .expect("link")
        .file_type()
        .is_symlink());
}

#[test]
fn a_temporary_left_by_a_dead_writer_is_removed_by_the_next_locked_reading() {
    let store = Store::new();
    assert_eq!(store.add("c1", "eth0"), "10.60.0.2/24");
    let stale = store.dir().join(".ipam-file-tmp.999999.10.60.0.3");
    fs::write(&stale, "dead\r\neth0").expect("write");
    // CHECK and STATUS take no lock: they leave it.
    store.run("STATUS", "", "", None);
    assert!(stale.exists());
    assert_eq!(store.add("c2", "eth0"), "10.60.0.3/24");
    assert!(!stale.exists(), "{:?}", store.names());
}
