//! The inputs the cases build: a configuration with extra members, a
//! debug file in a directory of its own.

use std::fs;
use std::path::PathBuf;

use serde_json::Value;

/// A configuration with extra top-level members (raw JSON text).
pub fn conf_with(version: &str, extra: &str) -> Vec<u8> {
    let mut s = format!(r#"{{"cniVersion":"{version}","name":"hostile","type":"noop""#);
    if !extra.is_empty() {
        s.push(',');
        s.push_str(extra);
    }
    s.push('}');
    s.into_bytes()
}

/// A temporary directory holding a debug file with `contents`.
pub fn debug_dir(contents: &Value) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("debug.json");
    fs::write(&path, contents.to_string()).expect("write debug file");
    (dir, path)
}

/// A configuration of exactly `size` bytes, padded with `pad` repeated in
/// an unknown string member.
pub fn padded_conf(size: usize, pad: &[u8]) -> Vec<u8> {
    let mut conf = br#"{"cniVersion":"1.0.0","name":"hostile","type":"noop","pad":""#.to_vec();
    let room = size - conf.len() - 2;
    conf.extend(pad.iter().copied().cycle().take(room));
    conf.extend_from_slice(b"\"}");
    assert_eq!(conf.len(), size);
    conf
}
