//! Our `bandwidth` beside the reference one (Debian's
//! containernetworking-plugins), each run as a process in a host
//! namespace of the test with a container namespace whose `eth0` is the
//! peer of the host's `veth-bw`, at configuration versions 0.3.1, 0.4.0
//! and 1.0.0: the same qdiscs (kind, handle, parent, rate, burst as `tc
//! -j qdisc show` prints them), the same filter (`tc -j filter show`:
//! kind, priority, protocol, flowid, match, and the mirred redirect that
//! runs) and the same ifb. Then each side's DEL after the other's ADD:
//! ours leaves nothing; the reference's leaves what it leaves after its
//! own ADD (the host veth's qdiscs, which it never removes). Needs root.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use tests::{ip, plugin_bin_dir, reference_plugin_dir, NetNs, StdoutJson};

const VERSIONS: [&str; 3] = ["0.3.1", "0.4.0", "1.0.0"];
const HOST_VETH: &str = "veth-bw";
const CONTAINER_ID: &str = "bw-vs-reference";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    Ours,
    Reference,
}

impl Side {
    fn plugin(self) -> std::path::PathBuf {
        match self {
            Side::Ours => plugin_bin_dir().join("bandwidth"),
            Side::Reference => reference_plugin_dir().join("bandwidth"),
        }
    }
}

/// A host namespace and a container namespace joined by a veth.
struct Pod {
    host: NetNs,
    ctr: NetNs,
}

impl Pod {
    fn new(tag: &str) -> Pod {
        let host = NetNs::create(&format!("{tag}-h"));
        let ctr = NetNs::create(&format!("{tag}-c"));
        for args in [
            vec!["-n", host.name(), "link", "add", HOST_VETH, "type", "veth"],
            vec!["-n", host.name(), "link", "set", HOST_VETH, "up"],
        ] {
            let args = if args[3] == "add" {
                [args, vec!["peer", "name", "eth0", "netns", ctr.name()]].concat()
            } else {
                args
            };
            let out = ip(&args);
            assert!(out.success(), "ip {args:?}: {out:?}");
        }
        Pod { host, ctr }
    }

    /// The configuration at `version`, chained after a result listing
    /// both ends, with the entry `fields`.
    fn conf(&self, version: &str, fields: &Value) -> Vec<u8> {
        let mut conf = json!({
            "cniVersion": version, "name": "bw-vs", "type": "bandwidth",
            "prevResult": {"cniVersion": version, "ips": [], "interfaces": [
                {"name": HOST_VETH},
                {"name": "eth0", "sandbox": self.ctr.path()}]}
        });
        conf.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        conf.to_string().into_bytes()
    }

    /// Runs `side`'s plugin inside the host namespace; its JSON answer,
    /// or an error naming the call.
    fn run(&self, side: Side, command: &str, conf: &[u8]) -> Value {
        let plugin = side.plugin();
        let mut child = Command::new("ip")
            .args(["netns", "exec", self.host.name()])
            .arg(&plugin)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("CNI_COMMAND", command)
            .env("CNI_CONTAINERID", CONTAINER_ID)
            .env("CNI_NETNS", self.ctr.path())
            .env("CNI_IFNAME", "eth0")
            .env("CNI_PATH", plugin.parent().unwrap_or(Path::new("/")))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the plugin");
        child.stdin.take().unwrap().write_all(conf).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{side:?} {command}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    fn tc(&self, args: &[&str]) -> Value {
        let out = Command::new("ip")
            .args(["netns", "exec", self.host.name(), "tc", "-j"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "tc {args:?}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }

    /// The host namespace's shaping, as `tc` and `ip` show it, with the
    /// ifb's name and what a side may differ in left out.
    fn state(&self) -> Value {
        let ifbs: Vec<String> = ip(&["-n", self.host.name(), "-j", "link", "show", "type", "ifb"])
            .stdout_json()
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["ifname"].as_str().unwrap().to_owned())
            .collect();
        let dev = |name: &Value| {
            if ifbs.iter().any(|i| name == i.as_str()) {
                json!("IFB")
            } else {
                name.clone()
            }
        };
        let qdiscs: Vec<Value> = self
            .tc(&["qdisc", "show"])
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                json!({"dev": dev(&q["dev"]), "kind": q["kind"], "handle": q["handle"],
                       "root": q["root"], "parent": q["parent"],
                       "rate": q["options"]["rate"], "burst": burst(&q["options"]["burst"])})
            })
            .collect();
        let filters: Vec<Value> = self
            .tc(&["filter", "show", "dev", HOST_VETH, "ingress"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["options"]["actions"].is_array())
            .map(|f| {
                let o = &f["options"];
                // The action that runs: the first (the reference's second,
                // behind a "stolen" redirect, never does).
                let a = &o["actions"][0];
                json!({"parent": f["parent"], "protocol": f["protocol"], "pref": f["pref"],
                       "kind": f["kind"], "flowid": o["flowid"], "match": o["match"],
                       "action": {"kind": a["kind"], "mirred_action": a["mirred_action"],
                                  "direction": a["direction"], "to_dev": dev(&a["to_dev"]),
                                  "control_action": a["control_action"]}})
            })
            .collect();
        json!({"ifbs": ifbs, "qdiscs": qdiscs, "filters": filters})
    }
}

/// A burst as `tc` prints it, in bytes, to 6 significant digits: the
/// reference computes the bucket's time in floating point and rounds down
/// to whole microseconds, the kernel computes ours from the bytes, so the
/// two differ in the last bytes of half a gigabyte.
fn burst(shown: &Value) -> Value {
    match shown.as_f64() {
        Some(b) if b > 0.0 => {
            let scale = 10f64.powi(b.log10().floor() as i32 - 5);
            json!((b / scale).round() * scale)
        }
        _ => shown.clone(),
    }
}

/// What a scenario configures.
fn scenarios() -> [(&'static str, Value); 3] {
    [
        (
            "both",
            json!({"ingressRate": 8_000_000, "ingressBurst": 80_000,
                   "egressRate": 16_000_000, "egressBurst": 160_000}),
        ),
        (
            // As containerd sends it: Go's spelling of the keys.
            "ingress-runtime",
            json!({"capabilities": {"bandwidth": true},
                   "runtimeConfig": {"bandwidth": {"IngressRate": 1_000_000, "IngressBurst": 1_000_000}}}),
        ),
        (
            // containerd's default burst, under the reference's 4 GB limit.
            "egress-4294967295",
            json!({"egressRate": 100_000_000, "egressBurst": 4_294_967_295u64}),
        ),
    ]
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_same_configuration_gives_the_references_qdiscs_filter_and_ifb() {
    let mut differences = Vec::new();
    for version in VERSIONS {
        for (name, fields) in scenarios() {
            let mut seen = Vec::new();
            for side in [Side::Reference, Side::Ours] {
                let pod = Pod::new("bwvs");
                let conf = pod.conf(version, &fields);
                let add = pod.run(side, "ADD", &conf);
                seen.push((add["interfaces"].as_array().map(Vec::len), pod.state()));
                pod.run(Side::Ours, "DEL", &conf);
            }
            let shaped = seen[0].1["qdiscs"]
                .as_array()
                .is_some_and(|q| q.iter().any(|q| q["kind"] == "tbf"));
            assert!(shaped, "{version} {name}: the reference shaped nothing");
            if seen[0] != seen[1] {
                differences.push(format!(
                    "{version} {name}:\n  reference {:?}\n  ours      {:?}",
                    seen[0], seen[1]
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn each_sides_del_undoes_the_others_add_as_it_undoes_its_own() {
    let (_, fields) = &scenarios()[0];
    for version in VERSIONS {
        let untouched = {
            let pod = Pod::new("bwdel");
            pod.state()
        };
        // Ours after the reference's ADD: nothing left.
        let pod = Pod::new("bwdel");
        let conf = pod.conf(version, fields);
        pod.run(Side::Reference, "ADD", &conf);
        pod.run(Side::Ours, "DEL", &conf);
        assert_eq!(
            pod.state(),
            untouched,
            "{version}: our DEL after the reference's ADD"
        );
        drop(pod);

        // The reference's after ours, and after its own: the same.
        let left_by = |adder: Side| {
            let pod = Pod::new("bwdel");
            let conf = pod.conf(version, fields);
            pod.run(adder, "ADD", &conf);
            pod.run(Side::Reference, "DEL", &conf);
            let state = pod.state();
            pod.run(Side::Ours, "DEL", &conf);
            assert_eq!(pod.state(), untouched, "{version}: our DEL cleans the rest");
            state
        };
        let after_ours = left_by(Side::Ours);
        assert_eq!(after_ours["ifbs"], json!([]), "{version}");
        assert_eq!(after_ours, left_by(Side::Reference), "{version}");
    }
}
