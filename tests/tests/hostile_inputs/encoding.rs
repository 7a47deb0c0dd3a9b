//! Invalid UTF-8 and NUL bytes in stdin, environment values and `CNI_ARGS`.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::checks::{fails_with, setup_error, succeeds};
use crate::inputs::{conf_with, debug_dir};
use crate::process::{invocation, noop, run};

#[test]
fn invalid_utf8_in_stdin() {
    let bin = noop();
    // In the network name: read as U+FFFD, which is not a valid name.
    let out = run(
        &bin,
        &invocation("ADD")
            .stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\xff\",\"type\":\"noop\"}"[..]),
    );
    fails_with(&out, 7);
    // In an unknown member: fine.
    let out = run(
        &bin,
        &invocation("ADD")
            .stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"x\":\"\xff\xfe\xc3\"}"[..]),
    );
    succeeds(&out);
    assert_eq!(out.stdout, b"{}");
    // In the version: not one we support.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&b"{\"cniVersion\":\"1.0.0\xff\",\"name\":\"n\"}"[..]),
    );
    fails_with(&out, 1);
    // Outside any string: not JSON.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}\xff"[..]),
    );
    fails_with(&out, 6);
    // In a prevResult printed back: U+FFFD in valid JSON.
    let (_dir, debug) = debug_dir(&json!({"ReportResult": "PASSTHROUGH"}));
    let conf = b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"prevResult\":{\"interfaces\":[{\"name\":\"e\xff\"}]}}";
    let out = run(&bin, &invocation("ADD").debug(&debug).stdin(&conf[..]));
    succeeds(&out);
    assert_eq!(out.json()["interfaces"][0]["name"], "e\u{fffd}");
    // VERSION: the requested version cannot be read; the newest answers.
    let out = run(
        &bin,
        &invocation("VERSION").stdin(&b"{\"cniVersion\":\"0.4.0\xff\"}"[..]),
    );
    succeeds(&out);
    assert_eq!(out.json()["cniVersion"], "1.1.0");
}

fn non_utf8(bytes: &[u8]) -> OsString {
    OsString::from_vec(bytes.to_vec())
}

#[test]
fn invalid_utf8_in_env_values() {
    let bin = noop();
    let conf = conf_with("1.0.0", "");
    let add = || invocation("ADD").stdin(conf.clone());
    let err = fails_with(
        &run(&bin, &add().env("CNI_CONTAINERID", non_utf8(b"c\xff"))),
        4,
    );
    assert!(err.details.contains("CNI_CONTAINERID"), "{err:?}");
    // The kernel's rules for interface names (no '/', ':' or whitespace,
    // at most 15 bytes) allow any other byte, as the reference does.
    succeeds(&run(&bin, &add().env("CNI_IFNAME", non_utf8(b"eth\xff"))));
    let err = fails_with(
        &run(&bin, &add().env("CNI_IFNAME", non_utf8(b"eth\xff/"))),
        4,
    );
    assert!(err.details.contains("CNI_IFNAME"), "{err:?}");
    let err = fails_with(
        &run(&bin, &add().env("CNI_COMMAND", non_utf8(b"AD\xff"))),
        4,
    );
    assert!(err.msg.contains("unknown CNI_COMMAND"), "{err:?}");
    // Values the SDK only passes on: the call succeeds.
    for (key, value) in [
        ("CNI_NETNS", &b"/var/run/netns/\xff\xfe"[..]),
        ("CNI_PATH", &b"/opt/\xff:/usr/lib/cni"[..]),
        ("CNI_NETNS_OVERRIDE", &b"\xff"[..]),
    ] {
        let out = run(&bin, &add().env(key, non_utf8(value)));
        succeeds(&out);
        assert_eq!(out.stdout, b"{}", "{key}");
    }
    // A variable name that is not UTF-8 is simply not ours.
    let out = run(&bin, &add().env(non_utf8(b"CNI_\xff"), "x"));
    succeeds(&out);
}

#[test]
fn invalid_utf8_in_cni_args_is_recorded_leniently() {
    let (_dir, debug) = debug_dir(&json!({}));
    let mut args = format!("DEBUG={};K8S_POD_NAME=", debug.display()).into_bytes();
    args.extend_from_slice(b"web\xff");
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", non_utf8(&args))
            .stdin(conf_with("1.0.0", "")),
    );
    succeeds(&out);
    let written: Value = serde_json::from_slice(&fs::read(&debug).unwrap()).unwrap();
    assert!(
        written["CmdArgs"]["Args"]
            .as_str()
            .unwrap()
            .ends_with("web\u{fffd}"),
        "{written}"
    );
    // A debug path that is not UTF-8 names no file: the reference panics.
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", non_utf8(b"DEBUG=/tmp/\xff"))
            .stdin(conf_with("1.0.0", "")),
    );
    setup_error(&out);
}

#[test]
fn nul_bytes() {
    let bin = noop();
    // A raw NUL inside a string is a control character: not JSON.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"a\0b\"}"[..]),
    );
    fails_with(&out, 6);
    // After the document: trailing characters.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&b"{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}\0"[..]),
    );
    fails_with(&out, 6);
    // Escaped in the name: not a valid name.
    let out = run(
        &bin,
        &invocation("ADD").stdin(&br#"{"cniVersion":"1.0.0","name":"a\u0000b"}"#[..]),
    );
    fails_with(&out, 7);
    // Escaped in a prevResult printed back: escaped again.
    let (_dir, debug) = debug_dir(&json!({"ReportResult": "PASSTHROUGH"}));
    let conf = conf_with(
        "1.0.0",
        r#""prevResult":{"interfaces":[{"name":"e\u0000"}]}"#,
    );
    let out = run(&bin, &invocation("ADD").debug(&debug).stdin(conf));
    succeeds(&out);
    assert_eq!(out.json()["interfaces"][0]["name"], "e\0");
    // Only stdin can carry them: the OS cannot put NUL in an environment.
    let err = Command::new(&bin)
        .env("CNI_COMMAND", "ADD\0DEL")
        .stdin(Stdio::null())
        .output()
        .expect_err("NUL in an environment value");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
}
