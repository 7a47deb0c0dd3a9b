//! JSON the tests write, read and compare: files, the first difference
//! between two observations, and the normalisations that make ours and
//! the reference's comparable.

use std::fs;
use std::path::Path;

use serde_json::Value;

/// The first place where two JSON values differ, as a JSON-pointer-like
/// path with both sides (`None` when they are equal). Handy to point at the
/// difference between two large observations.
pub fn first_difference(a: &Value, b: &Value) -> Option<String> {
    fn walk(a: &Value, b: &Value, path: &str) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => x.keys().chain(y.keys()).find_map(|k| {
                let sub = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => walk(p, q, &sub),
                    (p, q) => Some(format!("{sub}: {p:?} vs {q:?}")),
                }
            }),
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| walk(p, q, &format!("{path}/{i}"))),
            _ if a == b => None,
            _ => Some(format!("{path}: {a} vs {b}")),
        }
    }
    walk(a, b, "")
}

/// Asserts that each step's observation of ours equals the reference's
/// (`(what, ours, reference)`), naming the step, the version and the
/// first difference.
///
/// # Panics
/// At the first step whose two sides differ.
pub fn assert_same_steps(version: &str, steps: &[(&str, &Value, &Value)]) {
    for (what, ours, reference) in steps {
        assert_eq!(
            first_difference(ours, reference),
            None,
            "{what} at {version}: ours {ours:#}\nreference {reference:#}"
        );
    }
}

/// Writes `value` as JSON to `path`.
///
/// # Panics
/// On I/O errors.
pub fn write_json(path: &Path, value: &Value) {
    fs::write(path, serde_json::to_vec(value).expect("serialisable"))
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// Reads and parses the JSON file at `path`.
///
/// # Panics
/// On I/O or parse errors.
pub fn read_json(path: &Path) -> Value {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "{} is not JSON ({e}): {}",
            path.display(),
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// Decodes standard (RFC 4648, padded) base64, as Go's `encoding/json` uses
/// for `[]byte` fields such as the noop debug file's `CmdArgs.StdinData`.
///
/// # Panics
/// On invalid input.
pub fn base64_decode(s: &str) -> Vec<u8> {
    fn val(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("invalid base64 byte {c:?}"),
        }
    }
    let bytes = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c) << (18 - 6 * i);
        }
        let n = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => panic!("invalid base64 length"),
        };
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    out
}

/// Replaces, in every string inside `value`, the text after
/// `netplugin failed: ` with `<stderr>`.
///
/// libcni reports a plugin that exits non-zero with an empty stdout as
/// `netplugin failed: "<its stderr>"`; when the stderr is a crash trace
/// (the reference noop panics in some scenarios) only the fact that it
/// failed that way is comparable across implementations.
pub fn redact_netplugin_stderr(value: &mut Value) {
    const MARK: &str = "netplugin failed: ";
    match value {
        Value::String(s) => {
            if let Some(i) = s.find(MARK) {
                s.truncate(i + MARK.len());
                s.push_str("<stderr>");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_netplugin_stderr),
        Value::Object(map) => map.values_mut().for_each(redact_netplugin_stderr),
        _ => {}
    }
}

/// Fills in `ips[].version` of a 0.3.x/0.4.0 result (as libcni shows
/// it) from the address where it is `""`: reference plugins leave it out
/// below 1.0.0 (the loopback, host-device), which SPEC-0.4.0 "Result"
/// requires and ours set (cni-conformance ADD-LAYOUT). For comparing
/// results side by side; results that have it are left as they are.
pub fn fill_ip_versions(result: &mut Value) {
    // `get_mut`: indexing a result without `ips` would add a null one.
    let ips = result.get_mut("ips").and_then(Value::as_array_mut);
    for ip in ips.into_iter().flatten() {
        if ip["version"] == "" {
            let v6 = ip["address"].as_str().is_some_and(|a| a.contains(':'));
            ip["version"] = serde_json::json!(if v6 { "6" } else { "4" });
        }
    }
}

/// `{relative path: content}` of every file below `dir` (none when it does
/// not exist); contents that are not UTF-8 are read lossily.
///
/// # Panics
/// If an entry of `dir` cannot be listed or read.
pub fn files_below(dir: &Path) -> Value {
    fn walk(dir: &Path, base: &Path, out: &mut serde_json::Map<String, Value>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                let key = p
                    .strip_prefix(base)
                    .expect("below base")
                    .to_string_lossy()
                    .into_owned();
                let content = fs::read(&p).expect("reading file");
                out.insert(
                    key,
                    Value::String(String::from_utf8_lossy(&content).into_owned()),
                );
            }
        }
    }
    let mut out = serde_json::Map::new();
    walk(dir, dir, &mut out);
    Value::Object(out)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn base64_round_trips_go_output() {
        assert_eq!(base64_decode("eyJhIjoxfQ=="), br#"{"a":1}"#);
        assert_eq!(base64_decode("YWI="), b"ab");
        assert_eq!(base64_decode("YWJj"), b"abc");
        assert_eq!(base64_decode(""), b"");
    }

    #[test]
    fn redaction_keeps_prefix() {
        let mut v = serde_json::json!({"e": {"msg": "netplugin failed: \"panic: x\"", "code": 0}});
        redact_netplugin_stderr(&mut v);
        assert_eq!(v["e"]["msg"], "netplugin failed: <stderr>");
    }
}
