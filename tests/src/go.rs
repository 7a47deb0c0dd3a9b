//! Go programs the tests run, built once per test process in GOPATH mode
//! against Debian's reference library: the helpers of `tests/go/src`
//! (`cnidriver`, ...) and the reference `noop` test double.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context};

use crate::binaries::{target_dir, workspace_root, INSTALL_HINT};

/// GOPATH entry holding Debian's Go sources (`golang-github-appc-cni-dev`
/// installs the reference CNI library below it).
pub const DEBIAN_GOPATH: &str = "/usr/share/gocode";

/// Go import path of the reference runtime library.
pub const LIBCNI_IMPORT_PATH: &str = "github.com/containernetworking/cni/libcni";

/// Go import path of the reference `noop` test double.
pub const REFERENCE_NOOP_IMPORT_PATH: &str = "github.com/containernetworking/cni/plugins/test/noop";

/// Directory under the target dir where Go helpers are built.
fn go_bin_root() -> PathBuf {
    target_dir().join("go-bin")
}

/// Panics with an actionable message unless Go and Debian's CNI library
/// source are available.
fn require_go_toolchain() {
    let libcni = Path::new(DEBIAN_GOPATH)
        .join("src")
        .join(LIBCNI_IMPORT_PATH);
    if !libcni.is_dir() {
        panic!(
            "the reference CNI Go library is missing ({} not found); {INSTALL_HINT}",
            libcni.display()
        );
    }
    match Command::new("go")
        .arg("version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`go version` failed ({}): {}; {INSTALL_HINT}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!("cannot run `go` ({e}); {INSTALL_HINT}"),
    }
}

/// Runs `go build` in GOPATH mode (modules off, cgo off) for `import_path`,
/// writing the binary atomically to `out`.
fn go_build(gopath: &[PathBuf], import_path: &str, out: &Path) -> anyhow::Result<()> {
    let dir = out.parent().context("output path has no parent")?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let gopath = std::env::join_paths(gopath).context("joining GOPATH")?;
    // Build next to the destination and rename, so a concurrently running
    // test process never executes a half-written binary.
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        out.file_name().and_then(OsStr::to_str).unwrap_or("bin"),
        std::process::id()
    ));
    let mut cmd = Command::new("go");
    cmd.arg("build")
        .arg("-o")
        .arg(&tmp)
        .arg(import_path)
        .env("GO111MODULE", "off")
        .env("GOPATH", &gopath)
        .env("CGO_ENABLED", "0")
        .env_remove("GOFLAGS")
        .current_dir(workspace_root())
        .stdin(Stdio::null());
    if std::env::var_os("GOCACHE").is_none_or(|c| c.is_empty()) {
        cmd.env("GOCACHE", target_dir().join("go-cache"));
    }
    let output = cmd.output().context("running `go build`")?;
    if !output.status.success() {
        let _ = fs::remove_file(&tmp);
        bail!(
            "`go build {import_path}` (GOPATH={}) failed ({}):\n{}",
            gopath.to_string_lossy(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    fs::rename(&tmp, out).with_context(|| format!("renaming to {}", out.display()))?;
    Ok(())
}

type BuildSlot = Arc<OnceLock<PathBuf>>;

static GO_BUILDS: OnceLock<Mutex<HashMap<String, BuildSlot>>> = OnceLock::new();

/// Runs `build` at most once per process for `key`; concurrent callers with
/// the same key wait for the first build, different keys build in parallel.
fn build_once(key: &str, build: impl FnOnce() -> PathBuf) -> PathBuf {
    let slot = {
        let mut map = GO_BUILDS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        map.entry(key.to_owned()).or_default().clone()
    };
    slot.get_or_init(build).clone()
}

/// Builds the Go program in `tests/go/src/<name>` (GOPATH mode, against
/// Debian's reference library) into `<target>/go-bin/<name>`, once per test
/// process, and returns the binary's path.
///
/// # Panics
/// If Go or the reference library is missing (naming
/// `scripts/install-test-deps.sh`), or if the build fails.
pub fn go_binary(name: &str) -> PathBuf {
    build_once(&format!("helper:{name}"), || {
        require_go_toolchain();
        let out = go_bin_root().join(name);
        let gopath = [
            workspace_root().join("tests/go"),
            PathBuf::from(DEBIAN_GOPATH),
        ];
        go_build(&gopath, name, &out).unwrap_or_else(|e| panic!("{e:#}"));
        out
    })
}

/// Builds the reference `noop` test double from Debian's source
/// (`github.com/containernetworking/cni/plugins/test/noop`, GOPATH mode) into
/// `<target>/go-bin/ref-noop/noop`, once per test process, and returns the
/// path of that binary.
///
/// The binary is literally named `noop` and is alone in its directory, so
/// `reference_noop().parent()` can be used as a `CNI_PATH` entry.
///
/// # Panics
/// Like [`go_binary`].
pub fn reference_noop() -> PathBuf {
    build_once("reference-noop", || {
        require_go_toolchain();
        let out = go_bin_root().join("ref-noop").join("noop");
        go_build(
            &[PathBuf::from(DEBIAN_GOPATH)],
            REFERENCE_NOOP_IMPORT_PATH,
            &out,
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
        out
    })
}
