//! Deeply nested JSON (100,000 levels) in a configuration, with and without
//! a debug file, and for VERSION.

use serde_json::json;
use tests::invariants::Printed;

use crate::checks::{fails_with, setup_error, succeeds, well_formed};
use crate::inputs::{conf_with, debug_dir};
use crate::process::{dns_mac, invocation, noop, run};

const DEPTH: usize = 100_000;

fn nested_arrays() -> String {
    format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH))
}

fn nested_objects() -> String {
    format!("{}1{}", r#"{"a":"#.repeat(DEPTH), "}".repeat(DEPTH))
}

#[test]
fn nested_json_100k_levels_is_a_decoding_error() {
    let cases = [
        ("top-level arrays", nested_arrays().into_bytes()),
        (
            "arrays in an unknown key",
            conf_with("1.0.0", &format!(r#""x":{}"#, nested_arrays())),
        ),
        (
            "objects in prevResult",
            conf_with("1.0.0", &format!(r#""prevResult":{}"#, nested_objects())),
        ),
        (
            "objects before name",
            format!(r#"{{"x":{},"name":"n"}}"#, nested_objects()).into_bytes(),
        ),
    ];
    for (what, stdin) in cases {
        // The SDK reads the configuration: code 6 ("failed to decode").
        let out = run(&dns_mac(), &invocation("ADD").stdin(stdin.clone()));
        let err = fails_with(&out, 6);
        assert!(
            err.msg.contains("recursion limit") || err.msg.contains("invalid type"),
            "dns-mac, {what}: {err:?}"
        );
        // The noop reads it itself (as the reference does): the SDK skips
        // unknown values without recursing, so the noop's own reading
        // fails, reported as a plain error (999), or the SDK's check of
        // the shape fails first (6).
        let out = run(&noop(), &invocation("ADD").stdin(stdin));
        let err = match well_formed(&out) {
            Printed::Error(e) if [6, 999].contains(&e.code.0) => e,
            other => panic!("noop, {what}: {other:?}"),
        };
        assert!(
            err.msg.contains("recursion limit") || err.msg.contains("invalid type"),
            "noop, {what}: {err:?}"
        );
    }
}

#[test]
fn nested_json_100k_levels_with_a_debug_file_is_a_setup_error() {
    // With CNI_ARGS naming a debug file the noop reads the configuration
    // before the SDK does, as the reference does (which panics there).
    let (_dir, debug) = debug_dir(&json!({}));
    let conf = conf_with("1.0.0", &format!(r#""x":{}"#, nested_arrays()));
    let out = run(&noop(), &invocation("ADD").debug(&debug).stdin(conf));
    setup_error(&out);
    assert!(out.stderr_str().contains("recursion limit"), "{out:?}");
}

#[test]
fn nested_json_100k_levels_for_version_is_ignored() {
    let out = run(&noop(), &invocation("VERSION").stdin(nested_objects()));
    let Printed::Document(doc) = succeeds(&out) else {
        panic!("{out:?}")
    };
    assert_eq!(doc["cniVersion"], "1.1.0", "{doc}");
}
