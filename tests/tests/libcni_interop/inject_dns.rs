//! INJECT-DNS: the second noop of a chain replaces the nameservers of the
//! result it is handed.

use serde_json::{json, Value};

use crate::differences::expect_crash_and_redact;
use crate::differential::{differential, run_direct};
use crate::fixtures::{at_least_040, literal_result, two_noop_chain, VERSIONS};

/// INJECT-DNS in every list version through libcni, and run directly on
/// a `prevResult` without DNS.
#[test]
fn inject_dns() {
    let obs = differential(|sb| {
        let mut out = serde_json::Map::new();
        for v in VERSIONS {
            let list = two_noop_chain(sb, v, "dnsnet", "INJECT-DNS");
            let mut report = sb.driver().add_check_del(&list);
            if !at_least_040(v) {
                expect_crash_and_redact(sb, &mut report["del"]);
            }
            out.insert(v.to_owned(), report);
        }
        // Direct: a prevResult without "dns" gets one.
        sb.write("direct.json", &json!({"ReportResult": "INJECT-DNS"}));
        let stdin = json!({
            "cniVersion": "0.4.0", "name": "direct",
            "prevResult": {"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}]}
        });
        let direct = run_direct(sb, "ADD", &[], &stdin.to_string());
        out.insert("direct".to_owned(), direct);
        Value::Object(out)
    });

    for v in VERSIONS {
        let mut expected = literal_result(v);
        // Only the nameservers are replaced; domain/search/options survive.
        expected["dns"]["nameservers"] = json!(["1.2.3.4"]);
        let r = &obs[v];
        assert_eq!(r["add"], json!({"ok": true, "result": expected}), "{v}");
        assert_eq!(r["cachedAfterAdd"], expected, "{v}");
        assert_eq!(r["ok"], at_least_040(v), "{v}: {r}");
    }
    assert_eq!(
        obs["direct"],
        json!({
            "status": 0,
            "stdout": {"cniVersion": "0.4.0", "ips": [{"version": "4", "address": "10.1.2.3/24"}], "dns": {"nameservers": ["1.2.3.4"]}},
            // Compact, no newline, in the Go struct's field order.
            "stdoutRaw": r#"{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.2.3/24"}],"dns":{"nameservers":["1.2.3.4"]}}"#,
            "stderr": ""
        })
    );
}
