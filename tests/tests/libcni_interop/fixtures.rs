//! What the scenarios share: the versions they run in and the result
//! literal the first noop of a chain reports.

use std::path::PathBuf;

use serde_json::{json, Value};
use tests::FAKE_NETNS;

use crate::sandbox::Sandbox;

/// Every list version the reference noop and libcni share with a result type.
pub const VERSIONS: [&str; 4] = ["0.3.0", "0.3.1", "0.4.0", "1.0.0"];

/// The reference noop's default VERSION answer (note the deliberately
/// invalid `0.-42.0`).
pub const NOOP_DEFAULT_VERSIONS: [&str; 7] = [
    "0.-42.0", "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0",
];

/// Whether list version `v` (one of [`VERSIONS`]) has CHECK and hands DEL
/// the cached result (0.4.0 and later).
pub fn at_least_040(v: &str) -> bool {
    matches!(v, "0.4.0" | "1.0.0")
}

/// A full result literal in the given version, exactly as libcni marshals it
/// back (so `result == literal` can be asserted).
pub fn literal_result(v: &str) -> Value {
    let mut r = json!({
        "cniVersion": v,
        "interfaces": [{"name": "eth0", "mac": "00:11:22:33:44:55", "sandbox": FAKE_NETNS}],
        "ips": [
            {"interface": 0, "address": "10.1.2.3/24", "gateway": "10.1.2.1"},
            {"interface": 0, "address": "fd00::3/64"}
        ],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.2.1"}],
        "dns": {"nameservers": ["8.8.8.8"], "domain": "example.com", "search": ["example.com"], "options": ["ndots:2"]}
    });
    if v != "1.0.0" {
        r["ips"][0]["version"] = json!("4");
        r["ips"][1]["version"] = json!("6");
    }
    r
}

/// Writes the chain `[noop(ReportResult=literal), noop(ReportResult=second)]`
/// in version `v` as `<name>.conflist`, with the debug files `first.json`
/// and `second.json`, and returns the conflist's path.
pub fn two_noop_chain(sb: &Sandbox, v: &str, name: &str, second: &str) -> PathBuf {
    sb.write(
        "first.json",
        &json!({"ReportResult": literal_result(v).to_string()}),
    );
    sb.write("second.json", &json!({"ReportResult": second}));
    sb.write(
        &format!("{name}.conflist"),
        &json!({
            "cniVersion": v,
            "name": name,
            "plugins": [
                {"type": "noop", "debugFile": sb.path_str("first.json")},
                {"type": "noop", "debugFile": sb.path_str("second.json")}
            ]
        }),
    )
}
