//! A plugin printing 64 MiB per call leaves the tool's memory bounded:
//! its peak RSS stays under 64 MiB (it used to keep, and copy for every
//! check, all of every call's output), and the report says how much was
//! cut. One test in its own binary: the peak is read from our reaped
//! children's usage.

mod common;

use std::process::Command;

use common::script;
use nix::sys::resource::{getrusage, UsageWho};

#[test]
fn a_plugin_flooding_stdout_leaves_the_tool_under_64_mib_and_the_report_says_how_much_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = script(dir.path(), "flood", "yes | head -c 67108864");
    // Six calls (one lifecycle), 384 MiB of output in all.
    let out = Command::new(env!("CARGO_BIN_EXE_cni-conformance"))
        .args(["--kind", "ipam", "--versions", "1.0.0"])
        .args(["--netns", "/nonexistent/netns"])
        .args(["--only", "OUTPUT-ONE-DOCUMENT"])
        .arg(&plugin)
        .output()
        .unwrap();
    let peak_kib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", excerpt(&stdout));
    assert!(peak_kib < 64 << 10, "peak RSS {} MiB", peak_kib >> 10);
    assert!(
        stdout.len() < 64 << 10,
        "a report of {} bytes",
        stdout.len()
    );
    assert!(
        stdout.contains("stdout is not JSON: 67108864 bytes, more than any result"),
        "{}",
        excerpt(&stdout)
    );
    assert!(
        stdout.contains(&format!("({} bytes more)", (64 << 20) - 1 - 600)),
        "{}",
        excerpt(&stdout)
    );
}

/// The start of a report, for a failure message.
fn excerpt(text: &str) -> &str {
    &text[..text.len().min(4096)]
}
