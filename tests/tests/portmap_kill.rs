//! A `portmap` process (nftables backend) killed at any point of its ADD
//! leaves all of that container's rules or none: each family's rules go
//! to the kernel in one batch. The DEL the runtime then runs removes
//! them, whether the ADD recorded their handles, left its record pending
//! or wrote none, and the record with them. Needs root; the rules land in
//! a host namespace of the test's own.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use tests::{plugin_bin_dir, NetNs};

/// The rules of `ruleset` (`nft -j list ruleset`) commented `id`.
fn rules_of(ruleset: &Value, id: &str) -> usize {
    ruleset["nftables"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["rule"]["comment"] == id)
        .count()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_portmap_killed_during_add_leaves_all_of_its_rules_or_none() {
    let host = NetNs::create("pm-kill");
    let plugin = plugin_bin_dir().join("portmap");
    let conf = |_: usize| {
        json!({
            "cniVersion": "1.0.0", "name": "killnet", "type": "portmap", "backend": "nftables",
            "runtimeConfig": {"portMappings": [
                {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
                {"hostPort": 8081, "containerPort": 81, "protocol": "udp"}
            ]},
            "prevResult": {"cniVersion": "1.0.0",
                "interfaces": [{"name": "eth0", "sandbox": "/var/run/netns/x"}],
                "ips": [{"address": "10.88.0.5/16", "interface": 0}]}
        })
    };
    // Two DNAT rules and two masquerading rules per container.
    const ALL: usize = 4;
    let run = |command: &str, id: &str, attempt: usize| {
        Command::new("ip")
            .args(["netns", "exec", host.name()])
            .arg(&plugin)
            .env("CNI_COMMAND", command)
            .env("CNI_CONTAINERID", id)
            .env("CNI_NETNS", "/var/run/netns/x")
            .env("CNI_IFNAME", "eth0")
            .env("CNI_PATH", "/nonexistent")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(|mut child| {
                let mut stdin = child.stdin.take().expect("stdin");
                let _ = stdin.write_all(conf(attempt).to_string().as_bytes());
                child
            })
            .expect("start portmap")
    };
    let ruleset = || {
        let out = Command::new("ip")
            .args(["netns", "exec", host.name(), "nft", "-j", "list", "ruleset"])
            .output()
            .expect("nft");
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
    };
    // Where the ADDs record their rules' handles.
    let records = std::path::Path::new(cni_netfilter::nft::RECORD_DIR)
        .join(
            std::fs::metadata(host.path())
                .expect("the namespace")
                .ino()
                .to_string(),
        )
        .join("killnet");
    // What the network's records say of `id`.
    let record_of = |id: &str| {
        let namespace = records.parent().expect("the namespace's records");
        (cni_netfilter::nft::RuleRecord::in_dir(namespace, "killnet", id))
            .expect("a record's names")
            .read()
            .expect("the record read")
    };
    let mut outcomes = (0, 0);
    const ATTEMPTS: usize = 40;
    for attempt in 0..ATTEMPTS {
        let id = format!("kill-{attempt}");
        let mut child = run("ADD", &id, attempt);
        // Kill points spread over the run (a few milliseconds): the point
        // itself is what varies, nothing waits for readiness. The last run
        // is let finish, so both outcomes are seen.
        if attempt < ATTEMPTS - 1 {
            std::thread::sleep(Duration::from_micros(250 * attempt as u64));
            let _ = child.kill();
        }
        let _ = child.wait();
        match rules_of(&ruleset(), &id) {
            0 => outcomes.0 += 1,
            ALL => outcomes.1 += 1,
            n => panic!("{id}: {n} of its {ALL} rules after a kill"),
        }
        if attempt == ATTEMPTS - 1 {
            assert!(
                record_of(&id).is_some_and(|r| !r.pending && r.rules.len() == ALL),
                "{id}: the finished ADD's record"
            );
        }
        let del = run("DEL", &id, attempt).wait_with_output().expect("DEL");
        assert!(del.status.success(), "{id}: DEL failed");
        assert_eq!(rules_of(&ruleset(), &id), 0, "{id}: rules left after DEL");
        let left: Vec<String> = std::fs::read_dir(&records)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains(&id))
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{id}: record files after DEL");
        assert_eq!(record_of(&id), None, "{id}: its record after DEL");
    }
    assert!(
        !records.exists(),
        "the network's record directory goes with its last record"
    );
    assert!(
        outcomes.0 > 0 && outcomes.1 > 0,
        "kills before and after the batch: {outcomes:?}"
    );
}
