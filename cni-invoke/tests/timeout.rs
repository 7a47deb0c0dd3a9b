//! A runtime's timeout: one deadline per operation.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use cni_invoke::{NetworkList, Runtime};
use common::{attachment, script};

const LIST: &str =
    r#"{"cniVersion":"1.0.0","name":"slow","plugins":[{"type":"quick"},{"type":"stuck"}]}"#;

/// `quick` passes its prevResult-less ADD an empty result; `stuck` hangs.
fn plugins(dir: &Path) {
    script(
        dir,
        "quick",
        r#"cat >/dev/null; echo '{"cniVersion":"1.0.0"}'"#,
    );
    script(dir, "stuck", "cat >/dev/null; sleep 300");
}

/// Far below `stuck`'s own `sleep 300`: the deadline, not the plugin,
/// ended the run, however loaded the machine is.
const NOT_WAITED_FOR: Duration = Duration::from_secs(60);

#[test]
fn a_runtime_timeout_stops_the_hanging_plugin_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    plugins(dir.path());
    let net = NetworkList::from_bytes(LIST.as_bytes()).unwrap();
    // One deadline for the list: `quick` (a few milliseconds, a thousand
    // times less even on a loaded machine) leaves the rest to `stuck`.
    let runtime = Runtime::new(vec![dir.path().into()], dir.path().join("cache"))
        .with_timeout(Duration::from_secs(3));
    let started = Instant::now();
    let e = runtime.add(&net, &attachment()).unwrap_err();
    assert!(started.elapsed() < NOT_WAITED_FOR);
    assert!(e.msg.contains("stuck") && e.msg.contains("ADD"), "{e:?}");
    assert!(e.msg.contains("3s deadline"), "{e:?}");
    assert!(e.details.contains("plugin type=\"stuck\""), "{e:?}");
}

#[test]
fn a_version_probe_through_the_runtime_has_its_deadline_too() {
    let dir = tempfile::tempdir().unwrap();
    plugins(dir.path());
    let runtime = Runtime::new(vec![dir.path().into()], dir.path().join("cache"))
        .with_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let e = runtime.version_info("stuck").unwrap_err();
    assert!(started.elapsed() < NOT_WAITED_FOR);
    assert!(e.msg.contains("did not finish VERSION"), "{e:?}");
}
