//! Duplicate JSON keys, numbers out of range, and addresses the parsers
//! must take as the reference does (zone ids, IPv4-mapped IPv6, CIDRs with
//! host bits), in configurations and `prevResult`s.

use std::fs;

use serde_json::json;
use tests::invariants::Printed;

use crate::checks::{fails_with, setup_error, succeeds};
use crate::inputs::{conf_with, debug_dir};
use crate::process::{dns_mac, invocation, noop, run, Run};

/// Runs ADD through the noop with `ReportResult: PASSTHROUGH`, so the
/// configuration's `prevResult` is read and printed back.
fn passthrough(version: &str, prev_result: &str) -> Run {
    let (_dir, debug) = debug_dir(&json!({"ReportResult": "PASSTHROUGH"}));
    let conf = conf_with(version, &format!(r#""prevResult":{prev_result}"#));
    run(&noop(), &invocation("ADD").debug(&debug).stdin(conf))
}

/// A `prevResult` that cannot be read: the noop (which reads its
/// configuration before the SDK when `CNI_ARGS` names a debug file, where
/// the reference panics) exits with a test setup error naming `needle`;
/// the SDK (through dns-mac) answers code 6 naming it.
fn prev_result_rejected(version: &str, prev_result: &str, needle: &str) {
    let out = passthrough(version, prev_result);
    setup_error(&out);
    assert!(
        out.stderr_str().contains(needle),
        "noop, {prev_result}: {out:?}"
    );
    let conf = conf_with(version, &format!(r#""prevResult":{prev_result}"#));
    let out = run(&dns_mac(), &invocation("ADD").stdin(conf));
    let err = fails_with(&out, 6);
    assert!(
        err.to_string().contains(needle),
        "dns-mac, {prev_result}: {err:?}"
    );
}

#[test]
fn duplicate_json_keys() {
    let bin = noop();
    // The last one wins, as in the reference's decoder.
    let conf = br#"{"cniVersion":"0.4.0","cniVersion":"9.9.9","name":"bad name!","name":"n","type":"noop"}"#;
    let out = run(&bin, &invocation("ADD").stdin(&conf[..]));
    let err = fails_with(&out, 1);
    // The noop prints errors as the reference does (no cniVersion): the
    // version it read is named in the details.
    assert!(err.details.contains(r#"config is "9.9.9""#), "{err:?}");
    let conf = br#"{"cniVersion":"9.9.9","cniVersion":"0.4.0","name":"bad name!","name":"n","type":"noop"}"#;
    succeeds(&run(&bin, &invocation("ADD").stdin(&conf[..])));
    let out = run(&bin, &invocation("VERSION").stdin(&conf[..]));
    succeeds(&out);
    assert_eq!(out.json()["cniVersion"], "0.4.0");
    // In prevResult, as the noop reads it.
    let out = passthrough(
        "1.0.0",
        r#"{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.1/24"}],"ips":[{"address":"10.0.0.2/24"}]}"#,
    );
    succeeds(&out);
    assert_eq!(out.json()["ips"][0]["address"], "10.0.0.2/24");
    // In the debug file.
    let dir = tempfile::tempdir().unwrap();
    let debug = dir.path().join("debug.json");
    fs::write(
        &debug,
        br#"{"ReportResult":"{\"a\":1}","ReportResult":"{\"b\":2}"}"#,
    )
    .unwrap();
    let out = run(
        &bin,
        &invocation("ADD")
            .debug(&debug)
            .stdin(conf_with("1.0.0", "")),
    );
    succeeds(&out);
    assert_eq!(out.stdout, br#"{"b":2}"#);
}

#[test]
fn numbers_out_of_range() {
    // Interface index -1 and 2^64, mtu as a string and beyond u32: the
    // prevResult cannot be read (the message says "invalid number" or
    // "invalid type" without naming the field).
    for (prev, needle) in [
        (
            r#"{"interfaces":[{"name":"eth0"}],"ips":[{"address":"10.0.0.2/24","interface":-1}]}"#,
            "prevResult",
        ),
        (
            r#"{"interfaces":[{"name":"eth0"}],"ips":[{"address":"10.0.0.2/24","interface":18446744073709551616}]}"#,
            "prevResult",
        ),
        (r#"{"interfaces":[{"name":"eth0","mtu":"1500"}]}"#, "1500"),
        (
            r#"{"interfaces":[{"name":"eth0","mtu":4294967296}]}"#,
            "prevResult",
        ),
        (
            r#"{"interfaces":[{"name":"eth0","mtu":1e400}]}"#,
            "prevResult",
        ),
    ] {
        prev_result_rejected("1.1.0", prev, needle);
    }
    // An index past the interfaces is only a number: printed back.
    let out = passthrough(
        "1.0.0",
        r#"{"ips":[{"address":"10.0.0.2/24","interface":4294967296}]}"#,
    );
    succeeds(&out);
    assert_eq!(out.json()["ips"][0]["interface"], 4294967296u64);
    // cniVersion as a number.
    let out = run(
        &noop(),
        &invocation("ADD").stdin(&br#"{"cniVersion":1.0,"name":"n"}"#[..]),
    );
    fails_with(&out, 6);
    // Numbers beyond their range in the debug file.
    for debug in [
        json!({"ReportError": "x", "ReportErrorCode": -1}),
        json!({"ReportError": "x", "ReportErrorCode": 18446744073709551616u128}),
        json!({"ExitWithCode": 9223372036854775808u64}),
    ] {
        let (_dir, path) = debug_dir(&debug);
        let out = run(
            &noop(),
            &invocation("ADD").debug(&path).stdin(conf_with("1.0.0", "")),
        );
        setup_error(&out);
    }
}

#[test]
fn ipv6_zone_ids() {
    // Addresses and gateways do not take zones (nor does the reference).
    for prev in [
        r#"{"ips":[{"address":"fe80::1%eth0/64"}]}"#,
        r#"{"ips":[{"address":"fe80::2/64","gateway":"fe80::1%eth0"}]}"#,
        r#"{"ips":[{"address":"fe80::2/64"}],"routes":[{"dst":"::/0","gw":"fe80::1%eth0"}]}"#,
    ] {
        prev_result_rejected("1.0.0", prev, "%eth0");
    }
    // DNS nameservers are strings: kept as they are.
    let out = passthrough(
        "1.0.0",
        r#"{"ips":[{"address":"fe80::2/64"}],"dns":{"nameservers":["fe80::1%eth0"]}}"#,
    );
    succeeds(&out);
    assert_eq!(out.json()["dns"]["nameservers"][0], "fe80::1%eth0");
}

#[test]
fn ipv4_mapped_ipv6() {
    let prev = r#"{"cniVersion":"1.0.0","ips":[{"address":"::ffff:10.1.0.5/120","gateway":"::ffff:10.1.0.1"}]}"#;
    for version in ["1.0.0", "0.4.0", "0.2.0"] {
        let out = passthrough(version, prev);
        let Printed::Document(doc) = succeeds(&out) else {
            panic!("{out:?}")
        };
        eprintln!("IPv4-mapped prevResult in {version}: {doc}");
        assert_eq!(doc["cniVersion"], version);
    }
}

#[test]
fn cidrs_with_host_bits_are_kept() {
    let prev = r#"{"cniVersion":"1.0.0","ips":[{"address":"10.1.0.5/16"},{"address":"2001:db8::5/64"}],"routes":[{"dst":"10.96.0.1/12"}]}"#;
    for version in ["1.1.0", "0.4.0"] {
        let doc = passthrough(version, prev).json();
        assert_eq!(doc["ips"][0]["address"], "10.1.0.5/16", "{doc}");
        assert_eq!(doc["ips"][1]["address"], "2001:db8::5/64", "{doc}");
        assert_eq!(doc["routes"][0]["dst"], "10.96.0.1/12", "{doc}");
    }
    for bad in ["10.1.0.5/33", "2001:db8::5/129", "10.1.0.5/-1", "10.1.0.5"] {
        let prev = format!(r#"{{"ips":[{{"address":"{bad}"}}]}}"#);
        prev_result_rejected("1.0.0", &prev, bad);
    }
}
