//! Streams a runtime may get wrong: stdout closed before the plugin
//! writes, stdin that never closes.

use std::fs;
use std::time::Duration;

use serde_json::{json, Value};
use tests::invariants::contains;

use crate::checks::succeeds;
use crate::inputs::{conf_with, debug_dir};
use crate::process::{invocation, noop, run, StdoutMode};

#[test]
fn stdout_closed_before_the_plugin_writes() {
    let bin = noop();
    // The runtime closed its end of the pipe: a clear error exit.
    for command in ["ADD", "VERSION"] {
        let mut inv = invocation(command).stdin(conf_with("1.0.0", ""));
        inv.stdout = StdoutMode::ReaderClosed;
        let out = run(&bin, &inv);
        assert!(!out.timed_out && out.signal.is_none(), "{command}: {out:?}");
        assert_eq!(out.status, Some(1), "{command}: {out:?}");
        assert!(!contains(&out.stderr, b"panicked at"), "{out:?}");
        assert!(out.stderr_str().contains("stdout"), "{command}: {out:?}");
    }
    // No stdout at all (fd 1 closed): no panic, an exit status, and the
    // debug file (which may now be opened as fd 1) is written whole.
    let (_dir, debug) = debug_dir(&json!({}));
    let mut inv = invocation("ADD")
        .debug(&debug)
        .stdin(conf_with("1.0.0", ""));
    inv.stdout = StdoutMode::FdClosed;
    let out = run(&bin, &inv);
    assert!(!out.timed_out && out.signal.is_none(), "{out:?}");
    assert!(out.status.is_some(), "{out:?}");
    assert!(!contains(&out.stderr, b"panicked at"), "{out:?}");
    let written: Value = serde_json::from_slice(&fs::read(&debug).unwrap())
        .unwrap_or_else(|e| panic!("debug file not JSON ({e}) after {out:?}"));
    assert_eq!(written["Command"], "ADD");
    eprintln!(
        "stdout fd closed: exit {:?}, stderr {:?}",
        out.status,
        out.stderr_str()
    );
}

#[test]
fn stdin_that_never_closes_for_version_does_not_hang() {
    let bin = noop();
    for stdin in [
        &b""[..],
        &br#"{"cniVersion":"0.4.0"}"#[..],
        &br#"{"cniVersion":"0.4.0""#[..],
    ] {
        let mut inv = invocation("VERSION").stdin(stdin);
        inv.stdin_never_closes = true;
        let out = run(&bin, &inv);
        succeeds(&out);
        assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
        let doc = out.json();
        assert!(doc["supportedVersions"].is_array(), "{doc}");
        eprintln!(
            "VERSION with stdin open ({:?}): {:?}, {doc}",
            String::from_utf8_lossy(stdin),
            out.elapsed
        );
    }
}
