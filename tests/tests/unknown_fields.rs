//! Unknown configuration keys survive a plugin process exactly: a plugin
//! whose struct flattens `UnknownFields` (the documented pattern) prints
//! back every number as written, whatever its size, nested ones too.

use std::path::Path;

use tests::StdoutJson;
use tests::{run_plugin, FAKE_NETNS};

/// ADD of the `echo-config` test plugin with `conf` on stdin.
fn add(conf: &str) -> tests::RawOutput {
    let bin = Path::new(env!("CARGO_BIN_EXE_echo-config"));
    run_plugin(
        bin,
        &[
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_NETNS", FAKE_NETNS),
        ],
        conf.as_bytes(),
    )
}

#[test]
fn numbers_beyond_64_bits_in_unknown_fields_survive_add_byte_for_byte() {
    let conf = concat!(
        r#"{"cniVersion":"1.1.0","name":"net","type":"echo-config","mtu":1400,"#,
        r#""u128":340282366920938463463374607431768211457,"#,
        r#""neg":-18446744073709551617,"#,
        r#""exp":1e400,"tiny":-2.5E-400,"zero":-0,"#,
        r#""vendor":{"ids":[18446744073709551616,1e400,{"deeper":123456789012345678901234567890.000}]}}"#,
    );
    let out = add(conf);
    assert!(out.success(), "{out:?}");
    assert_eq!(out.stdout_str(), conf);
}

#[test]
fn typed_fields_beside_unknown_ones_are_still_checked() {
    let out =
        add(r#"{"cniVersion":"1.1.0","name":"net","type":"echo-config","mtu":"big","x":1e400}"#);
    let err = out.stdout_json();
    assert_eq!(err["code"], 6, "{out:?}");
    assert!(err["msg"].as_str().unwrap().contains("mtu"), "{out:?}");
}
