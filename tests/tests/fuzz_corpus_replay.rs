//! Replays the fuzz corpora through the fuzz targets' invariants, as a
//! normal test (the fuzzers themselves need nightly and time; see
//! `fuzz/README.md`).
//!
//! For each target of `tests::invariants::TARGETS`, every file of
//! `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` and every seed
//! generated from the fixtures goes through the same function the fuzz
//! target calls. Crashes the fuzzers found have their own tests at the end
//! (ignored as `KNOWN BUG` while open, so the suite stays green).
//!
//! `CNI_FUZZ_WRITE_SEEDS=1 cargo test -p tests --test fuzz_corpus_replay
//! write_seed_corpora` (re)writes the seeds into `fuzz/corpus/<target>/`.

use std::fs;
use std::path::{Path, PathBuf};

use tests::invariants::{self, run_target_catching, seeds, TARGETS};

fn fuzz_dir() -> PathBuf {
    tests::workspace_root().join("fuzz")
}

/// The files of `dir`, sorted (none when it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Runs every input of `target`; fails naming each input that violates an
/// invariant.
fn replay(target: &str) {
    let mut inputs: Vec<(String, Vec<u8>)> = seeds(target)
        .into_iter()
        .map(|(name, data)| (format!("seed {name}"), data))
        .collect();
    for sub in ["corpus", "regressions"] {
        for path in files(&fuzz_dir().join(sub).join(target)) {
            let data = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            inputs.push((path.display().to_string(), data));
        }
    }
    assert!(!inputs.is_empty(), "no inputs for {target}");
    let failures: Vec<String> = inputs
        .iter()
        .filter_map(|(name, data)| {
            run_target_catching(target, data)
                .err()
                .map(|e| format!("{name}:\n{e}"))
        })
        .collect();
    eprintln!("{target}: {} inputs replayed", inputs.len());
    assert!(
        failures.is_empty(),
        "{} of {} {target} inputs violate an invariant:\n\n{}",
        failures.len(),
        inputs.len(),
        failures.join("\n\n")
    );
}

#[test]
fn dispatch_corpus() {
    replay("dispatch");
}

#[test]
fn result_convert_corpus() {
    replay("result_convert");
}

#[test]
fn config_parse_corpus() {
    replay("config_parse");
}

#[test]
fn cni_args_corpus() {
    replay("cni_args");
}

#[test]
fn noop_debug_corpus() {
    replay("noop_debug");
}

#[test]
fn nft_netlink_corpus() {
    replay("nft_netlink");
}

#[test]
fn dbus_reply_corpus() {
    replay("dbus_reply");
}

#[test]
fn iptables_save_corpus() {
    replay("iptables_save");
}

#[test]
fn dhcp_message_corpus() {
    replay("dhcp_message");
}

#[test]
fn gob_stream_corpus() {
    replay("gob_stream");
}

#[test]
fn etcd_answer_corpus() {
    replay("etcd_answer");
}

#[test]
fn every_target_has_seeds() {
    for target in TARGETS {
        assert!(!seeds(target).is_empty(), "{target}");
    }
}

/// Writes the seed corpora into `fuzz/corpus/<target>/` when
/// `CNI_FUZZ_WRITE_SEEDS=1`; otherwise does nothing.
#[test]
fn write_seed_corpora() {
    if std::env::var_os("CNI_FUZZ_WRITE_SEEDS").is_none_or(|v| v != "1") {
        return;
    }
    for target in TARGETS {
        let dir = fuzz_dir().join("corpus").join(target);
        fs::create_dir_all(&dir).unwrap();
        for (name, data) in seeds(target) {
            fs::write(dir.join(name), data).unwrap();
        }
    }
}

/// The input formats round-trip (the seeds depend on it).
#[test]
fn input_formats_round_trip() {
    let data = invariants::encode_invocation(&[("A", b"1"), ("B", b"x=y")], b"{\0}");
    let (env, stdin) = invariants::decode_invocation(&data);
    assert_eq!(env.len(), 2);
    assert_eq!(env["B"], "x=y");
    assert_eq!(stdin, b"{\0}");
    let data = invariants::encode_noop_debug("ADD", b"{}", b"", b"{\"a\":\0}");
    let input = invariants::decode_noop_debug(&data);
    assert_eq!(input.command, b"ADD");
    assert_eq!(input.debug, b"{}");
    assert_eq!(input.stdin, b"{\"a\":\0}");
}

/// The checker rejects what it must (so a green replay means something).
#[test]
fn the_checker_rejects_malformed_answers() {
    use tests::invariants::{check_answer, Printed};
    assert_eq!(check_answer(0, b"", b""), Ok(Printed::Nothing));
    assert!(matches!(
        check_answer(0, b"{\"a\":1}\n", b"log"),
        Ok(Printed::Document(_))
    ));
    let error = br#"{"cniVersion":"1.0.0","code":7,"msg":"bad"}"#;
    assert!(matches!(
        check_answer(1, error, b""),
        Ok(Printed::Error(e)) if e.code.0 == 7
    ));
    assert!(check_answer(1, br#"{"code":100,"msg":"mine"}"#, b"").is_ok());
    for (status, stdout, stderr) in [
        (0, &b"{}{}"[..], &b""[..]),
        (0, b"{} x", b""),
        (0, b" ", b""),
        (0, b"{}", b"thread 'main' panicked at src/main.rs:1:1"),
        (1, b"", b""),
        (1, b"{}", b""),
        (1, br#"{"code":9,"msg":"x"}"#, b""),
        (1, br#"{"code":0,"msg":"x"}"#, b""),
        (1, br#"{"code":99,"msg":"x"}"#, b""),
        (1, br#"{"code":"7","msg":"x"}"#, b""),
        (1, br#"{"code":7}"#, b""),
        (2, b"{\"code\":7,\"msg\":\"x\"}{}", b""),
    ] {
        assert!(
            check_answer(status, stdout, stderr).is_err(),
            "{status} {:?} {:?}",
            String::from_utf8_lossy(stdout),
            String::from_utf8_lossy(stderr)
        );
    }
}

/// A panic the SDK catches (and reports as code 999) still fails a run.
#[test]
fn a_caught_panic_fails_the_run() {
    use cni_skel::{BoxError, Plugin, Reply, Request, TestRequest};
    struct Panics;
    impl Plugin for Panics {
        type Config = cni_types::NetConf;
        const CHECK: cni_skel::CheckSupport = cni_skel::CheckSupport::Full;
        // A test double: its ADD changes nothing on the host, so there is
        // nothing to verify and CHECK succeeds.
        fn check(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
            Ok(())
        }
        fn add(&self, _: &Request<Self::Config>) -> Result<Reply, BoxError> {
            panic!("boom")
        }
        fn del(&self, _: &Request<Self::Config>) -> Result<(), BoxError> {
            Ok(())
        }
    }
    let caught = invariants::catching_panics(|| {
        let out = TestRequest::new("ADD")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/var/run/netns/x")
            .env("CNI_IFNAME", "eth0")
            .stdin(r#"{"cniVersion":"1.0.0","name":"n"}"#)
            .run(&Panics, &cni_version::PluginInfo::all());
        assert_eq!(out.error().map(|e| e.code.0), Some(999));
    });
    assert!(caught.is_err(), "{caught:?}");
    assert!(invariants::catching_panics(|| ()).is_ok());
}

// ---------------------------------------------------------------------------
// Crashes the fuzzers found, minimised. Their inputs are also under
// `fuzz/regressions/<target>/`; while a bug is open its test here is
// `#[ignore = "KNOWN BUG: ..."]` (see fuzz/README.md).
// ---------------------------------------------------------------------------

/// Found by `cni_args` (minimised from 56 bytes to `Net=`): read into a
/// struct with an `IpNetwork` field, the error named the pair `""`
/// (`ARGS: error parsing value of pair "": invalid CIDR address: ""`):
/// a type that parses after reading a string (`IpNetwork`'s
/// `Deserialize`, and any `String::deserialize(d)?.parse()
/// .map_err(Error::custom)`) fails outside the CNI_ARGS deserializer's own
/// methods, where the pair used not to be known. Fixed in 7a8ef73.
#[test]
fn cni_args_errors_from_a_field_parser_name_the_pair() {
    for input in [&b"Net="[..], b"Net=10.1.0.5/33", b"IP=10.0.0.1;Net=x"] {
        invariants::check_cni_args(input)
            .unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(input)));
    }
}
