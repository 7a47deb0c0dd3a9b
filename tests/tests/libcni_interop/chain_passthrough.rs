//! The chain `[noop(ReportResult=literal), noop(PASSTHROUGH)]` through
//! libcni's ADD, CHECK and DEL, in every list version.

use serde_json::{json, Value};

use crate::differences::expect_crash_and_redact;
use crate::differential::{add_check_del_steps, differential, snapshot};
use crate::fixtures::{at_least_040, literal_result, two_noop_chain, VERSIONS};

fn chain_passthrough(v: &str) {
    let literal = literal_result(v);
    let obs = differential(|sb| {
        let list = two_noop_chain(sb, v, "chain", "PASSTHROUGH");
        let snap = |report| {
            let files = ["first.json", "second.json"];
            snapshot(sb, report, &files, "chain", "cnidriver-container", "eth0")
        };
        add_check_del_steps(sb, v, &list, snap)
    });

    let stdin_first = |step: &str| obs[step]["first.json"]["CmdArgs"]["StdinJSON"].clone();
    let stdin_second = |step: &str| obs[step]["second.json"]["CmdArgs"]["StdinJSON"].clone();

    // ADD: the last plugin's result is returned and cached verbatim.
    let add = &obs["add"];
    assert_eq!(add["report"]["ok"], true, "{add}");
    assert_eq!(add["report"]["result"], literal);
    assert_eq!(add["report"]["cachedResult"], literal);
    assert_eq!(add["cache"]["kind"], "cniCacheV1");
    assert_eq!(add["cache"]["networkName"], "chain");
    assert_eq!(add["cache"]["containerId"], "cnidriver-container");
    assert_eq!(add["cache"]["ifName"], "eth0");
    assert_eq!(add["cache"]["result"], literal);
    assert_eq!(add["first.json"]["Command"], "ADD");
    assert_eq!(add["second.json"]["Command"], "ADD");
    let first_in = stdin_first("add");
    assert_eq!(first_in["cniVersion"], v);
    assert_eq!(first_in["name"], "chain");
    assert_eq!(first_in["type"], "noop");
    assert!(
        first_in.get("prevResult").is_none(),
        "first plugin got a prevResult: {first_in}"
    );
    assert_eq!(stdin_second("add")["prevResult"], literal);

    // CHECK: 0.4.0+ hands the cached result to every plugin; older lists are
    // refused by libcni itself (plain error, no plugin runs).
    let check = &obs["check"];
    if at_least_040(v) {
        assert_eq!(check["report"]["ok"], true, "{check}");
        assert_eq!(check["first.json"]["Command"], "CHECK");
        assert_eq!(check["second.json"]["Command"], "CHECK");
        assert_eq!(stdin_first("check")["prevResult"], literal);
        assert_eq!(stdin_second("check")["prevResult"], literal);
    } else {
        assert_eq!(check["report"]["ok"], false);
        assert_eq!(check["report"]["error"]["code"], -1);
        assert_eq!(
            check["report"]["error"]["msg"],
            format!("configuration version \"{v}\" does not support the CHECK command")
        );
        assert_eq!(check["first.json"]["Command"], "ADD");
        assert_eq!(check["second.json"]["Command"], "ADD");
    }

    // DEL runs the plugins in reverse order.
    let del = &obs["del"];
    if at_least_040(v) {
        assert_eq!(del["report"]["ok"], true, "{del}");
        assert_eq!(del["report"]["cachedResult"], Value::Null);
        assert_eq!(
            del["cache"],
            Value::Null,
            "cache entry must be removed by DEL"
        );
        assert_eq!(del["first.json"]["Command"], "DEL");
        assert_eq!(del["second.json"]["Command"], "DEL");
        assert_eq!(stdin_first("del")["prevResult"], literal);
        assert_eq!(stdin_second("del")["prevResult"], literal);
    } else {
        // Before 0.4.0 DEL carries no prevResult, and the reference noop's
        // PASSTHROUGH dereferences the missing prevResult: it crashes (exit 2,
        // Go panic on stderr, empty stdout) and libcni reports code 0
        // "netplugin failed: ...". libcni stops there: the first plugin never
        // sees DEL and the cache entry stays.
        assert_eq!(del["report"]["ok"], false);
        assert_eq!(del["report"]["error"]["code"], 0);
        assert_eq!(del["report"]["error"]["msg"], "netplugin failed: <stderr>");
        assert_eq!(
            del["report"]["error"]["text"],
            "plugin type=\"noop\" failed (delete): netplugin failed: <stderr>"
        );
        assert_eq!(del["second.json"]["Command"], "DEL");
        assert!(stdin_second("del").get("prevResult").is_none());
        assert_eq!(del["first.json"]["Command"], "ADD");
        assert_eq!(del["report"]["cachedResult"], literal);
        assert_eq!(del["cache"]["result"], literal);
    }
}

#[test]
fn chain_passthrough_0_3_0() {
    chain_passthrough("0.3.0");
}

#[test]
fn chain_passthrough_0_3_1() {
    chain_passthrough("0.3.1");
}

#[test]
fn chain_passthrough_0_4_0() {
    chain_passthrough("0.4.0");
}

#[test]
fn chain_passthrough_1_0_0() {
    chain_passthrough("1.0.0");
}

/// The same chain through the driver's one-shot ADD/CHECK/DEL, for every
/// version, with a non-default container id and interface name.
#[test]
fn chain_add_check_del_all_versions() {
    let obs = differential(|sb| {
        let mut out = serde_json::Map::new();
        for v in VERSIONS {
            let list = two_noop_chain(sb, v, "acd", "PASSTHROUGH");
            let container = format!("ctr-{}", v.replace('.', "-"));
            let mut report = sb
                .driver()
                .with_container_id(&container)
                .with_ifname("net0")
                .add_check_del(&list);
            if !at_least_040(v) {
                expect_crash_and_redact(sb, &mut report["del"]);
            }
            out.insert(v.to_owned(), report);
        }
        Value::Object(out)
    });

    for v in VERSIONS {
        let r = &obs[v];
        let literal = literal_result(v);
        assert_eq!(r["add"], json!({"ok": true, "result": literal}), "{v}");
        assert_eq!(r["cachedAfterAdd"], literal, "{v}");
        if at_least_040(v) {
            assert_eq!(r["ok"], true, "{v}: {r}");
            assert_eq!(r["check"], json!({"ok": true}), "{v}");
            assert_eq!(r["del"], json!({"ok": true}), "{v}");
            assert_eq!(r["cachedAfterDel"], Value::Null, "{v}");
        } else {
            assert_eq!(r["ok"], false, "{v}");
            assert_eq!(
                r["check"],
                json!({"ok": true, "skipped": "cniVersion < 0.4.0"}),
                "{v}"
            );
            assert_eq!(r["del"]["error"]["code"], 0, "{v}");
            assert_eq!(r["cachedAfterDel"], literal, "{v}");
        }
    }
}
