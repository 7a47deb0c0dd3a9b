//! Where the binaries under test come from: ours, built with cargo once
//! per test process (the sample plugins, [`crate::cnitool_bin`]), and the
//! reference plugins Debian installs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Directory holding the reference plugins from Debian's
/// `containernetworking-plugins` package.
pub const REFERENCE_PLUGIN_DIR: &str = "/usr/lib/cni";

/// Script that installs every prerequisite of the end-to-end tests.
pub const INSTALL_HINT: &str =
    "run `scripts/install-test-deps.sh` (as root) to install golang-go, \
     golang-github-appc-cni-dev and containernetworking-plugins";

/// Root of the Cargo workspace (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .expect("the tests crate lives inside the workspace")
        .to_path_buf()
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` (relative paths are taken
/// relative to the workspace root) or `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// The `cargo` executable to use for nested builds: `$CARGO` at run time
/// (set by `cargo test`), else the cargo that compiled this crate.
fn cargo_executable() -> PathBuf {
    std::env::var_os("CARGO")
        .filter(|c| !c.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO")))
}

/// Runs `cargo build ARGS --quiet` in the workspace (debug profile), or
/// says why it failed, with cargo's output.
pub(crate) fn cargo_build(args: &[&str]) -> Result<(), String> {
    let output = Command::new(cargo_executable())
        .arg("build")
        .args(args)
        .arg("--quiet")
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo build {}` failed ({}):\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

static SAMPLE_PLUGINS: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Names a directory of sample plugin binaries built beforehand: when set
/// (non-empty), [`try_plugin_bin_dir`] returns it and builds nothing.
/// `scripts/vm/run-tests.sh` sets it for the tests it runs in a VM, where
/// running cargo would be slow and the target directory is read-only.
pub const PLUGIN_DIR_ENV: &str = "CNI_TEST_PLUGIN_DIR";

/// Builds the sample plugins (`cargo build -p plugins-sample --bins`, debug
/// profile) once per test process and returns the directory holding the
/// binaries (`<target>/debug`), or the build failure as text. With
/// [`PLUGIN_DIR_ENV`] set, returns that directory instead.
///
/// Most tests want [`plugin_bin_dir`], which panics instead.
pub fn try_plugin_bin_dir() -> Result<PathBuf, String> {
    SAMPLE_PLUGINS
        .get_or_init(|| {
            if let Some(dir) = std::env::var_os(PLUGIN_DIR_ENV).filter(|d| !d.is_empty()) {
                return Ok(PathBuf::from(dir));
            }
            cargo_build(&["-p", "plugins-sample", "--bins"])?;
            Ok(target_dir().join("debug"))
        })
        .clone()
}

/// Builds the sample plugins once per test process and returns the
/// directory containing their binaries (`<target>/debug`), suitable as a
/// `CNI_PATH` entry.
///
/// # Panics
/// If the build fails (the cargo output is part of the message).
pub fn plugin_bin_dir() -> PathBuf {
    try_plugin_bin_dir().unwrap_or_else(|e| panic!("{e}"))
}

/// Directory of Debian's reference plugins (`/usr/lib/cni`).
///
/// # Panics
/// If `host-local` is not installed there, with a message naming
/// `scripts/install-test-deps.sh`: interop tests must fail, never skip.
pub fn reference_plugin_dir() -> PathBuf {
    let dir = PathBuf::from(REFERENCE_PLUGIN_DIR);
    if !dir.join("host-local").is_file() {
        panic!(
            "reference CNI plugins are missing ({}/host-local not found); {INSTALL_HINT}",
            dir.display()
        );
    }
    dir
}

/// The `CNI_PATH` of a test that runs our plugins with the reference's
/// `host-local`: a directory holding only `host-local` (a link to
/// Debian's), then ours ([`plugin_bin_dir`], which has a `host-local` of
/// its own), then the reference directory for anything else. Put ours
/// first without this and `host-local` is ours.
///
/// # Panics
/// As [`plugin_bin_dir`] and [`reference_plugin_dir`], or when the
/// directory cannot be made.
pub fn ours_with_reference_host_local() -> Vec<PathBuf> {
    static LINKED: OnceLock<PathBuf> = OnceLock::new();
    let reference = reference_plugin_dir();
    // Once per process: the tests of one file run on threads of one
    // process, which share its pid.
    let dir = LINKED.get_or_init(|| {
        let dir = target_dir().join("reference-host-local");
        fs::create_dir_all(&dir).expect("creating the reference host-local directory");
        let link = dir.join("host-local");
        if fs::read_link(&link).ok() != Some(reference.join("host-local")) {
            // Another test process may be doing the same: link under a
            // name of our own, then rename over whatever is there.
            let tmp = dir.join(format!("host-local.{}", std::process::id()));
            let _ = fs::remove_file(&tmp);
            std::os::unix::fs::symlink(reference.join("host-local"), &tmp)
                .expect("linking the reference host-local");
            fs::rename(&tmp, &link).expect("placing the reference host-local");
        }
        dir
    });
    vec![dir.clone(), plugin_bin_dir(), reference]
}
