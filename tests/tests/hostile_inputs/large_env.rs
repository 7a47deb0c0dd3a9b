//! Large environments: 10,000 `CNI_ARGS` pairs, a `CNI_PATH` of 1,000
//! entries.

use std::fs;

use serde_json::{json, Value};

use crate::checks::{setup_error, succeeds};
use crate::inputs::{conf_with, debug_dir};
use crate::process::{invocation, noop, run};

#[test]
fn ten_thousand_cni_args_pairs() {
    let (_dir, debug) = debug_dir(&json!({}));
    let mut args: Vec<String> = (0..10_000).map(|i| format!("K{i}=V{i}")).collect();
    args.push(format!("DEBUG={}", debug.display()));
    let args = args.join(";");
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", &args)
            .stdin(conf_with("1.0.0", "")),
    );
    succeeds(&out);
    let written: Value = serde_json::from_slice(&fs::read(&debug).unwrap()).unwrap();
    assert_eq!(written["CmdArgs"]["Args"], args.as_str());
    // Without a debug file among them: nothing for the noop to follow.
    let args: Vec<String> = (0..10_000).map(|i| format!("K{i}=V{i}")).collect();
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", args.join(";"))
            .stdin(conf_with("1.0.0", "")),
    );
    setup_error(&out);
    // 10,000 malformed pairs.
    let out = run(
        &noop(),
        &invocation("ADD")
            .env("CNI_ARGS", "K;".repeat(10_000))
            .stdin(conf_with("1.0.0", "")),
    );
    setup_error(&out);
}

#[test]
fn cni_path_of_1000_entries() {
    let (_dir, debug) = debug_dir(&json!({}));
    let path: Vec<String> = (0..1000).map(|i| format!("/opt/cni/bin{i}")).collect();
    let path = path.join(":");
    for command in ["ADD", "DEL", "CHECK", "GC", "STATUS"] {
        let out = run(
            &noop(),
            &invocation(command)
                .env("CNI_PATH", &path)
                .debug(&debug)
                .stdin(conf_with("1.1.0", "")),
        );
        succeeds(&out);
        let written: Value = serde_json::from_slice(&fs::read(&debug).unwrap()).unwrap();
        assert_eq!(written["CmdArgs"]["Path"], path.as_str(), "{command}");
        assert_eq!(written["Command"], command);
    }
}
