//! Seed corpora for every target, from the spec examples and the
//! conversion fixtures.

use std::fs;

use serde_json::Value;

use super::dispatch::encode_invocation;
use super::noop_debug::encode_noop_debug;
use super::{dbus, dhcp, etcd, gob, iptables_save, nft};

/// The spec examples (`cni-types/tests/fixtures/spec-examples/*.json`), by
/// file name.
fn spec_examples() -> Vec<(String, Vec<u8>)> {
    let dir = crate::workspace_root().join("cni-types/tests/fixtures/spec-examples");
    let mut out: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let bytes = fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (name, bytes)
        })
        .collect();
    out.sort();
    out
}

/// The distinct inputs of `cni-types/tests/fixtures/conversions.json`:
/// (name, version, result JSON).
fn conversion_inputs() -> Vec<(String, String, Value)> {
    let path = crate::workspace_root().join("cni-types/tests/fixtures/conversions.json");
    let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases: Vec<Value> = serde_json::from_slice(&bytes).expect("conversions.json");
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for case in cases {
        let from = case["from"].as_str().unwrap_or_default().to_owned();
        let input = case["input"].clone();
        if seen.insert((from.clone(), input.to_string())) {
            let name = case["name"].as_str().unwrap_or_default();
            let name = name.split(" -> ").next().unwrap_or(name).replace(' ', "-");
            out.push((name, from, input));
        }
    }
    out
}

/// Configurations to seed with: the spec's examples, and a 1.1.0
/// configuration carrying each conversion fixture as `prevResult`.
fn seed_configs() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = spec_examples()
        .into_iter()
        .filter(|(n, _)| n.contains("-config"))
        .collect();
    for (name, from, input) in conversion_inputs() {
        let to = if from.starts_with("0.1") || from.starts_with("0.2") {
            "0.4.0"
        } else {
            "1.1.0"
        };
        let conf = serde_json::json!({
            "cniVersion": to, "name": "net", "type": "noop", "prevResult": input,
        });
        out.push((format!("prev-{name}"), conf.to_string().into_bytes()));
    }
    out
}

/// The seed corpus of `target`: (file name, contents), generated from the
/// fixtures. Written to `fuzz/corpus/<target>` by the replay test when
/// `CNI_FUZZ_WRITE_SEEDS=1` (see `fuzz/README.md`), and always replayed.
pub fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    match target {
        "dispatch" => {
            let env: [(&str, &[u8]); 5] = [
                ("CNI_CONTAINERID", b"c1"),
                ("CNI_NETNS", b"/var/run/netns/cni-fuzz-does-not-exist"),
                ("CNI_IFNAME", b"eth0"),
                ("CNI_PATH", b"/opt/cni/bin"),
                ("CNI_ARGS", b"IgnoreUnknown=1;K8S_POD_NAME=web"),
            ];
            let configs = seed_configs();
            for (i, (name, conf)) in configs.iter().enumerate() {
                // Every command for the spec examples; ADD and CHECK for
                // the prevResult ones.
                let commands: &[&str] = if name.starts_with("prev-") {
                    &["ADD", "CHECK"]
                } else {
                    &["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"]
                };
                for command in commands {
                    let mut e = vec![("CNI_COMMAND", command.as_bytes())];
                    e.extend(env);
                    out.push((
                        format!("seed-{i:02}-{command}-{name}"),
                        encode_invocation(&e, conf),
                    ));
                }
            }
            let conf: &[u8] = br#"{"cniVersion":"1.1.0","name":"net","type":"echo"}"#;
            out.push(("seed-no-command".into(), encode_invocation(&[], conf)));
            out.push((
                "seed-missing-env".into(),
                encode_invocation(&[("CNI_COMMAND", b"ADD")], conf),
            ));
            out.push((
                "seed-own-netns".into(),
                encode_invocation(
                    &[
                        ("CNI_COMMAND", b"ADD"),
                        ("CNI_CONTAINERID", b"c1"),
                        ("CNI_NETNS", b"/proc/self/ns/net"),
                        ("CNI_IFNAME", b"eth0"),
                    ],
                    conf,
                ),
            ));
        }
        "result_convert" => {
            for (name, from, input) in conversion_inputs() {
                let mut bytes = format!("{from}\n").into_bytes();
                bytes.extend(input.to_string().into_bytes());
                out.push((format!("seed-{from}-{name}"), bytes));
            }
            for (name, bytes) in spec_examples() {
                let version = match name.split_once("-result-") {
                    Some((_, v)) => v.to_owned(),
                    None if name == "SPEC-1.0.0-07-other" => "1.0.0".to_owned(),
                    None => continue,
                };
                let mut data = format!("{version}\n").into_bytes();
                data.extend(bytes);
                out.push((format!("seed-{name}"), data));
            }
        }
        "config_parse" => {
            for (name, bytes) in spec_examples() {
                if name.contains("-config") || name.contains("-conflist") {
                    out.push((format!("seed-{name}"), bytes));
                }
            }
            for (name, bytes) in seed_configs() {
                if name.starts_with("prev-") {
                    out.push((format!("seed-{name}"), bytes));
                }
            }
        }
        "cni_args" => {
            for (i, s) in [
                "",
                "FOO=BAR;ABC=123",
                "IgnoreUnknown=1;IP=10.0.0.5;K8S_POD_NAME=web;K8S_POD_NAMESPACE=default",
                "IP=2001:db8::5;MAC=c2:00:00:00:00:01;Verbose=TRUE;Count=7",
                "Offset=-3;Ratio=0.5;Mode=bridge;Net=10.1.0.5/16",
                "A=1;B=2;A=3",
                "IgnoreUnknown=true;A=",
                "IgnoreUnknown=yes",
                "A",
                "A=1;",
                "A=1=2",
                "A=1;;B=2",
                "DEBUG=/tmp/debug.json",
            ]
            .iter()
            .enumerate()
            {
                out.push((format!("seed-{i:02}"), s.as_bytes().to_vec()));
            }
        }
        "noop_debug" => {
            let debug_files: [(&str, &[u8]); 9] = [
                ("empty", b"{}"),
                ("passthrough", br#"{"ReportResult":"PASSTHROUGH"}"#),
                ("inject-dns", br#"{"ReportResult":"INJECT-DNS"}"#),
                (
                    "verbatim",
                    br#"{"ReportResult":"{\"cniVersion\":\"1.0.0\",\"ips\":[]}"}"#,
                ),
                ("error", br#"{"ReportError":"boom","ReportErrorCode":7}"#),
                ("error-999", br#"{"ReportError":"boom"}"#),
                (
                    "exit-code",
                    br#"{"ReportResult":"PASSTHROUGH","ExitWithCode":3,"ReportStderr":"hi"}"#,
                ),
                ("versions", br#"{"ReportVersionSupport":["0.4.0","1.0.0"]}"#),
                ("not-json", b"not json"),
            ];
            let configs: Vec<(String, Vec<u8>)> = seed_configs()
                .into_iter()
                .filter(|(n, _)| n.starts_with("prev-") || n.contains("-09-"))
                .take(6)
                .chain([(
                    "command-log".to_owned(),
                    br#"{"cniVersion":"1.0.0","name":"net","type":"noop","commandLog":"x"}"#
                        .to_vec(),
                )])
                .collect();
            for command in ["ADD", "DEL", "CHECK", "GC", "STATUS", "VERSION"] {
                for (d, debug) in &debug_files {
                    for (c, conf) in &configs {
                        // Every debug file with the first configuration,
                        // every configuration with PASSTHROUGH.
                        if c != &configs[0].0 && *d != "passthrough" {
                            continue;
                        }
                        out.push((
                            format!("seed-{command}-{d}-{c}"),
                            encode_noop_debug(command, debug, b"", conf),
                        ));
                    }
                }
            }
        }
        nft::TARGET => out = nft::seeds(),
        dbus::TARGET => out = dbus::seeds(),
        iptables_save::TARGET => out = iptables_save::seeds(),
        dhcp::TARGET => out = dhcp::seeds(),
        gob::TARGET => out = gob::seeds(),
        etcd::TARGET => out = etcd::seeds(),
        other => panic!("unknown fuzz target {other:?}"),
    }
    out
}
