//! The reference noop's own Ginkgo suite (Debian's golang-github-appc-cni-dev,
//! `plugins/test/noop`, 13 specs), run against our `noop`: the proof that it
//! is a drop-in for the reference test double.
//!
//! The suite builds the plugin it tests with `gexec.Build(packagePath)`. We
//! copy it into a temporary GOPATH and replace that one call with a function
//! naming our binary; every spec runs as written.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use tests::{plugin_bin_dir, target_dir, DEBIAN_GOPATH, REFERENCE_NOOP_IMPORT_PATH};

/// The one line of the suite that builds the reference noop.
const BUILD_CALL: &str = "gexec.Build(packagePath)";

/// What the suite calls instead: our binary, from `NOOP_UNDER_TEST`.
const UNDER_TEST_GO: &str = r#"package main_test

import (
	"errors"
	"os"
)

// noopUnderTest names the binary the suite runs: the Rust noop, in place
// of the reference noop that gexec.Build would compile.
func noopUnderTest() (string, error) {
	path := os.Getenv("NOOP_UNDER_TEST")
	if path == "" {
		return "", errors.New("NOOP_UNDER_TEST is not set")
	}
	return path, nil
}
"#;

/// Debian's sources of the suite and of the Go packages it needs.
fn require_suite_sources() -> std::path::PathBuf {
    let suite = Path::new(DEBIAN_GOPATH)
        .join("src")
        .join(REFERENCE_NOOP_IMPORT_PATH);
    for needed in [
        suite.join("noop_test.go"),
        Path::new(DEBIAN_GOPATH).join("src/github.com/onsi/ginkgo"),
        Path::new(DEBIAN_GOPATH).join("src/github.com/onsi/gomega/gexec"),
    ] {
        assert!(
            needed.exists(),
            "{} is missing: run `scripts/install-test-deps.sh` (as root) to install \
             golang-go, golang-github-appc-cni-dev, golang-github-onsi-ginkgo-dev and \
             golang-gomega-dev",
            needed.display()
        );
    }
    suite
}

#[test]
fn the_reference_noop_suite_passes_13_of_13_against_our_noop() {
    let suite = require_suite_sources();
    let noop = plugin_bin_dir().join("noop");
    let gopath = tempfile::tempdir().expect("a temporary GOPATH");
    let package = gopath.path().join("src/noopsuite");
    fs::create_dir_all(&package).unwrap();

    fs::copy(suite.join("noop_test.go"), package.join("noop_test.go")).unwrap();
    let suite_main = fs::read_to_string(suite.join("noop_suite_test.go")).unwrap();
    assert_eq!(
        suite_main.matches(BUILD_CALL).count(),
        1,
        "the suite builds its plugin with {BUILD_CALL} exactly once:\n{suite_main}"
    );
    fs::write(
        package.join("noop_suite_test.go"),
        suite_main.replace(BUILD_CALL, "noopUnderTest()"),
    )
    .unwrap();
    fs::write(package.join("under_test_test.go"), UNDER_TEST_GO).unwrap();

    let gopath_env = std::env::join_paths([gopath.path(), Path::new(DEBIAN_GOPATH)]).unwrap();
    let out = Command::new("go")
        .args([
            "test",
            "-v",
            "-count=1",
            "noopsuite",
            "-args",
            "-ginkgo.noColor",
        ])
        .env("GO111MODULE", "off")
        .env("GOPATH", &gopath_env)
        .env("GOCACHE", target_dir().join("go-cache"))
        .env("CGO_ENABLED", "0")
        .env("NOOP_UNDER_TEST", &noop)
        .env_remove("GOFLAGS")
        .current_dir(gopath.path())
        .stdin(Stdio::null())
        .output()
        .expect("cannot run `go test`: run `scripts/install-test-deps.sh` (as root)");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "go test failed:\n{report}");
    assert!(report.contains("Ran 13 of 13 Specs"), "{report}");
    assert!(
        report.contains("SUCCESS! -- 13 Passed | 0 Failed | 0 Pending | 0 Skipped"),
        "{report}"
    );
}
