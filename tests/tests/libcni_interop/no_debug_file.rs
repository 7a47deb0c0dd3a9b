//! No debug behaviour and no result: the noop without a debug file, and
//! with one that asks for nothing.

use serde_json::{json, Value};
use tests::{run_plugin, StdoutJson, FAKE_NETNS};

use crate::differential::differential;

/// Without a debug file the noop prints `{}` (libcni turns it into an empty
/// result of the list version); with a debug file but no ReportResult it
/// prints nothing, which libcni rejects on ADD.
#[test]
fn no_debug_file_and_empty_result() {
    let obs = differential(|sb| {
        let mut out = serde_json::Map::new();
        for v in ["0.4.0", "1.0.0"] {
            let list = sb.write(
                "plain.conflist",
                &json!({"cniVersion": v, "name": "plain", "plugins": [{"type": "noop"}]}),
            );
            let drv = sb.driver();
            let o = drv.run_outcome(drv.args("addcheckdel", Some(&list), None));
            assert!(o.success(), "{o:?}");
            out.insert(
                format!("plain-{v}"),
                json!({"report": o.stdout_json(), "driverStderr": o.stderr_str()}),
            );
        }
        sb.write("debug.json", &json!({}));
        let list = sb.write(
            "empty.conflist",
            &json!({"cniVersion": "1.0.0", "name": "empty", "plugins": [{"type": "noop", "debugFile": sb.path_str("debug.json")}]}),
        );
        out.insert("emptyResult".to_owned(), sb.driver().add_check_del(&list));

        let env = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "ctr"),
            ("CNI_NETNS", FAKE_NETNS),
            ("CNI_IFNAME", "eth0"),
            ("CNI_PATH", "/nonexistent"),
        ];
        let direct = run_plugin(
            &sb.noop(),
            &env,
            br#"{"cniVersion":"1.0.0","name":"direct"}"#,
        );
        out.insert(
            "direct".to_owned(),
            json!({"status": direct.status(), "stdout": direct.stdout_str(), "stderr": direct.stderr_str()}),
        );
        Value::Object(out)
    });

    const MSG: &str = "CNI_ARGS or config empty, no debug behavior\n";
    for v in ["0.4.0", "1.0.0"] {
        let p = &obs[format!("plain-{v}")];
        let r = &p["report"];
        let empty = json!({"cniVersion": v, "dns": {}});
        assert_eq!(r["ok"], true, "{p}");
        assert_eq!(r["add"]["result"], empty);
        assert_eq!(r["cachedAfterAdd"], empty);
        // libcni forwards a successful plugin's stderr: ADD, CHECK, DEL.
        assert_eq!(p["driverStderr"], MSG.repeat(3));
    }
    let e = &obs["emptyResult"];
    assert_eq!(e["add"]["ok"], false);
    assert_eq!(e["add"]["error"]["code"], -1);
    assert_eq!(
        e["add"]["error"]["msg"],
        "plugin type=\"noop\" failed (add): failed to unmarshal raw result: unexpected end of JSON input"
    );
    assert_eq!(e["del"], json!({"ok": true}));
    assert_eq!(
        obs["direct"],
        json!({"status": 0, "stdout": "{}", "stderr": MSG})
    );
}
