//! Shared support for the end-to-end tests of this workspace.
//!
//! The integration tests under `tests/tests/` exercise CNI plugins as real
//! processes, either directly ([`run_plugin`]) or through the reference Go
//! runtime library `libcni` ([`Driver`], which wraps the small Go program in
//! `tests/go/src/cnidriver`). Everything the tests need is built on demand,
//! once per test process:
//!
//! * our plugins: `cargo build -p plugins-sample --bins` ([`plugin_bin_dir`]);
//! * Go helpers from `tests/go/src/<name>` ([`go_binary`]);
//! * the reference `noop` test double from Debian's CNI source
//!   ([`reference_noop`]);
//! * the reference plugins shipped by Debian's `containernetworking-plugins`
//!   ([`reference_plugin_dir`]);
//! * our runtime's command line, `cnitool` (`cargo build -p cnitool
//!   --bin cnitool`, [`cnitool_bin`], driven by [`Cnitool`]).
//!
//! [`NetNs`] is a network namespace for tests that need a real one (root and
//! iproute2 required: they fail with a clear message otherwise).
//!
//! Missing prerequisites (Go, Debian's CNI library source, the reference
//! plugins) make the tests **fail** with a message pointing at
//! `scripts/install-test-deps.sh`; interop tests never skip silently.

pub mod etcd;
pub mod firewalld;
pub mod invariants;
pub mod observe;
pub mod podman;
pub mod podman_drivers;
pub mod sandbox;
pub mod side_by_side;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context};
use serde_json::Value;

/// Directory holding the reference plugins from Debian's
/// `containernetworking-plugins` package.
pub const REFERENCE_PLUGIN_DIR: &str = "/usr/lib/cni";

/// GOPATH entry holding Debian's Go sources (`golang-github-appc-cni-dev`
/// installs the reference CNI library below it).
pub const DEBIAN_GOPATH: &str = "/usr/share/gocode";

/// Go import path of the reference runtime library.
pub const LIBCNI_IMPORT_PATH: &str = "github.com/containernetworking/cni/libcni";

/// Go import path of the reference `noop` test double.
pub const REFERENCE_NOOP_IMPORT_PATH: &str = "github.com/containernetworking/cni/plugins/test/noop";

/// Script that installs every prerequisite of the end-to-end tests.
pub const INSTALL_HINT: &str =
    "run `scripts/install-test-deps.sh` (as root) to install golang-go, \
     golang-github-appc-cni-dev and containernetworking-plugins";

/// Default `CNI_NETNS` used by the tests: a path that does not exist, so no
/// plugin can touch a real namespace (the reference skel tolerates it).
pub const FAKE_NETNS: &str = "/var/run/netns/cni-test-does-not-exist";

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

static SAMPLE_PLUGINS: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Names a directory of sample plugin binaries built beforehand: when set
/// (non-empty), [`try_plugin_bin_dir`] returns it and builds nothing.
/// `scripts/vm/run-tests.sh` sets it for the tests it runs in a VM, where
/// running cargo would be slow and the target directory is read-only.
pub const PLUGIN_DIR_ENV: &str = "CNI_TEST_PLUGIN_DIR";

/// Set by `scripts/vm/run-tests.sh` in the guest to the backend it runs
/// under (`uml` or `qemu`); absent on the host.
pub const VM_BACKEND_ENV: &str = "CNI_TEST_VM_BACKEND";

/// How much slower than this host a process runs where the tests run: 1
/// on the host and under user-mode Linux (no emulation), 15 under QEMU's
/// software emulation (code runs 15-25x slower there, docs/vm.md). Tests
/// that bound a plugin's execution (cni-conformance's per-call timeout)
/// scale their bound by it, so a slow kernel is not taken for a hung
/// plugin.
pub fn slowness() -> u32 {
    match std::env::var(VM_BACKEND_ENV).as_deref() {
        Ok("qemu") => 15,
        _ => 1,
    }
}

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
            let output = Command::new(cargo_executable())
                .args(["build", "-p", "plugins-sample", "--bins", "--quiet"])
                .current_dir(workspace_root())
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run cargo: {e}"))?;
            if !output.status.success() {
                return Err(format!(
                    "`cargo build -p plugins-sample --bins` failed ({}):\n{}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
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

/// What a child process did: cni-invoke's [`RawOutput`],
/// the workspace's one process-outcome type (exit, stdout and stderr, kept
/// up to cni-invoke's limits). [`StdoutJson`] reads its stdout as JSON.
pub use cni_invoke::RawOutput;

/// A test's reading of a process's stdout as JSON.
pub trait StdoutJson {
    /// stdout parsed as a single JSON value (surrounding whitespace allowed).
    fn try_stdout_json(&self) -> anyhow::Result<Value>;

    /// stdout parsed as a single JSON value.
    ///
    /// # Panics
    /// If stdout is not valid JSON (the whole outcome is in the message).
    fn stdout_json(&self) -> Value {
        self.try_stdout_json().unwrap_or_else(|e| panic!("{e:#}"))
    }
}

impl StdoutJson for RawOutput {
    fn try_stdout_json(&self) -> anyhow::Result<Value> {
        serde_json::from_slice(&self.stdout)
            .with_context(|| format!("stdout is not one JSON value; outcome: {self:?}"))
    }
}

/// Runs `cmd` to its end with `stdin` (then closed) through cni-invoke's
/// one spawning path.
///
/// # Panics
/// If the process cannot be started.
pub fn output_of(cmd: &mut Command, stdin: &[u8]) -> RawOutput {
    cni_invoke::exec_raw(cmd, stdin, None)
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", cmd.get_program()))
}

/// `PATH` given to child processes whose environment is otherwise cleared.
fn child_path() -> OsString {
    std::env::var_os("PATH")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"))
}

/// Runs `bin` with a cleared environment plus `env` (and `PATH`, inherited
/// unless `env` sets it), feeds it `stdin` through a pipe that is then
/// closed, and waits for it.
///
/// # Panics
/// If the process cannot be started.
pub fn run_plugin(bin: &Path, env: &[(&str, &str)], stdin: &[u8]) -> RawOutput {
    run_with_clean_env(bin, std::iter::empty::<&OsStr>(), env, stdin)
}

/// Runs the plugin `bin` inside the network namespace `netns` (`ip netns
/// exec`), as [`run_plugin`] does on the host: a cleared environment
/// plus `env`, `stdin` through a pipe.
///
/// # Panics
/// If `ip` cannot be started.
pub fn run_plugin_in_netns(
    netns: &str,
    bin: &Path,
    env: &[(&str, &str)],
    stdin: &[u8],
) -> RawOutput {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", netns])
        .arg(bin)
        .env_clear()
        .env("PATH", child_path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    output_of(&mut cmd, stdin)
}

fn run_with_clean_env<I, S>(bin: &Path, args: I, env: &[(&str, &str)], stdin: &[u8]) -> RawOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(bin);
    cmd.args(args).env_clear().env("PATH", child_path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    output_of(&mut cmd, stdin)
}

/// Makes the calling process user and group `id`, with no supplementary
/// groups: for a child, in `CommandExt::pre_exec` (only async-signal-safe
/// calls).
///
/// # Errors
/// The system's, when the caller may not change its identity (not root).
pub fn become_user(id: u32) -> std::io::Result<()> {
    // SAFETY: plain syscalls without pointers but setgroups' null list of
    // length 0.
    #[allow(unsafe_code)]
    let failed = unsafe {
        libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(id) != 0 || libc::setuid(id) != 0
    };
    if failed {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A CNI runtime built on the reference `libcni`: runs the `cnidriver` Go
/// program (see `tests/go/src/cnidriver/main.go` for its full CLI and output
/// schema) with a cleared environment (plus `PATH`) and returns its JSON
/// report.
///
/// ```no_run
/// # use tests::Driver;
/// # let (bin_dir, cache, conflist) = (std::path::PathBuf::new(), std::path::PathBuf::new(), std::path::PathBuf::new());
/// let out = Driver::new([bin_dir], cache).with_ifname("net1").add(&conflist);
/// assert_eq!(out["ok"], true);
/// ```
#[derive(Clone, Debug)]
pub struct Driver {
    bin: PathBuf,
    cni_path: Vec<PathBuf>,
    cache_dir: PathBuf,
    container_id: String,
    netns: String,
    ifname: String,
    cni_args: Option<String>,
    cap_args: Option<Value>,
    stderr_log: Option<Arc<Mutex<String>>>,
}

impl Driver {
    /// A driver searching plugins in `cni_path` and caching results in
    /// `cache_dir`, with container id `cnidriver-container`, netns
    /// [`FAKE_NETNS`], ifname `eth0`, no CNI_ARGS and no capability args.
    /// Builds `cnidriver` (once per process) via [`go_binary`].
    pub fn new<I, P>(cni_path: I, cache_dir: impl Into<PathBuf>) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Driver {
            bin: go_binary("cnidriver"),
            cni_path: cni_path.into_iter().map(Into::into).collect(),
            cache_dir: cache_dir.into(),
            container_id: "cnidriver-container".to_owned(),
            netns: FAKE_NETNS.to_owned(),
            ifname: "eth0".to_owned(),
            cni_args: None,
            cap_args: None,
            stderr_log: None,
        }
    }

    /// Appends the driver's stderr (plugin stderr that libcni forwards on
    /// success, driver diagnostics) of every later run to `log`, so tests
    /// can compare it even when they only look at the JSON report.
    pub fn with_stderr_log(mut self, log: Arc<Mutex<String>>) -> Self {
        self.stderr_log = Some(log);
        self
    }

    /// Sets `CNI_CONTAINERID`.
    pub fn with_container_id(mut self, id: &str) -> Self {
        self.container_id = id.to_owned();
        self
    }

    /// Sets `CNI_NETNS`.
    pub fn with_netns(mut self, netns: &str) -> Self {
        self.netns = netns.to_owned();
        self
    }

    /// Sets `CNI_IFNAME`.
    pub fn with_ifname(mut self, ifname: &str) -> Self {
        self.ifname = ifname.to_owned();
        self
    }

    /// Sets `CNI_ARGS` (`K=V;K2=V2`); also used by [`Driver::version`].
    pub fn with_cni_args(mut self, args: &str) -> Self {
        self.cni_args = Some(args.to_owned());
        self
    }

    /// Sets libcni's capability args (a JSON object), injected as
    /// `runtimeConfig` into plugins that declare the capability.
    pub fn with_cap_args(mut self, caps: Value) -> Self {
        self.cap_args = Some(caps);
        self
    }

    /// Path of the `cnidriver` binary.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The `CNI_PATH` value the driver hands to plugins (entries joined
    /// with `:`).
    pub fn cni_path(&self) -> String {
        std::env::join_paths(&self.cni_path)
            .expect("CNI path entries contain no ':'")
            .to_string_lossy()
            .into_owned()
    }

    /// Command-line arguments for `command` (`add`, `check`, `del`,
    /// `addcheckdel` with a conflist; `version` with a plugin type).
    pub fn args(
        &self,
        command: &str,
        conflist: Option<&Path>,
        plugin: Option<&str>,
    ) -> Vec<OsString> {
        let mut a: Vec<OsString> =
            vec![command.into(), "--cni-path".into(), self.cni_path().into()];
        if let Some(c) = conflist {
            a.extend(["--conflist".into(), c.as_os_str().to_owned()]);
        }
        if let Some(p) = plugin {
            a.extend(["--plugin".into(), p.into()]);
        }
        if command != "version" {
            a.extend([
                "--cache-dir".into(),
                self.cache_dir.as_os_str().to_owned(),
                "--container-id".into(),
                self.container_id.clone().into(),
                "--netns".into(),
                self.netns.clone().into(),
                "--ifname".into(),
                self.ifname.clone().into(),
            ]);
            if let Some(caps) = &self.cap_args {
                a.extend(["--cap-args".into(), caps.to_string().into()]);
            }
        }
        if let Some(args) = &self.cni_args {
            a.extend(["--cni-args".into(), args.clone().into()]);
        }
        a
    }

    /// Runs `cnidriver` with raw arguments and returns the process outcome
    /// (the JSON report is on stdout; plugin stderr that libcni forwards on
    /// success is on stderr).
    pub fn run_outcome<I, S>(&self, args: I) -> RawOutput
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = run_with_clean_env(&self.bin, args, &[], b"");
        if let Some(log) = &self.stderr_log {
            log.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(&out.stderr_str());
        }
        out
    }

    /// Runs `cnidriver` with raw arguments and returns its JSON report.
    ///
    /// # Panics
    /// If the driver exits non-zero (misuse) or prints no JSON.
    pub fn run<I, S>(&self, args: I) -> Value
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.run_outcome(args);
        if !out.success() {
            panic!("cnidriver failed: {out:?}");
        }
        out.stdout_json()
    }

    /// `AddNetworkList`: `{"ok","command","result","cachedResult"[,"error"]}`.
    pub fn add(&self, conflist: &Path) -> Value {
        self.run(self.args("add", Some(conflist), None))
    }

    /// `CheckNetworkList`: `{"ok","command","result":null,"cachedResult"[,"error"]}`.
    pub fn check(&self, conflist: &Path) -> Value {
        self.run(self.args("check", Some(conflist), None))
    }

    /// `DelNetworkList`: `{"ok","command","result":null,"cachedResult"[,"error"]}`.
    pub fn del(&self, conflist: &Path) -> Value {
        self.run(self.args("del", Some(conflist), None))
    }

    /// ADD, CHECK (0.4.0+, unless disabled or ADD failed), DEL:
    /// `{"ok","add","cachedAfterAdd","check","del","cachedAfterDel"}`.
    pub fn add_check_del(&self, conflist: &Path) -> Value {
        self.run(self.args("addcheckdel", Some(conflist), None))
    }

    /// GC as libcni 1.2's `GCNetworkList` runs it (see the driver's docs:
    /// Debian's libcni predates it): DEL of the cached attachments not in
    /// `valid`, then GC of every plugin with `valid` injected as Go
    /// marshals it, `Value::Null` as a nil slice; `None` sends no key.
    /// `{"ok","command":"gc","sent":[each plugin's stdin][,"error"]}`.
    pub fn gc(&self, conflist: &Path, valid: Option<&Value>) -> Value {
        let mut args = self.args("gc", Some(conflist), None);
        if let Some(valid) = valid {
            args.extend(["--valid-attachments".into(), valid.to_string().into()]);
        }
        self.run(args)
    }

    /// `GetVersionInfo(plugin_type)`: `{"ok","cniVersion","supportedVersions"}`
    /// or `{"ok":false,"error"}`. With [`Driver::with_cni_args`], the
    /// plugin sees that `CNI_ARGS` instead of libcni's empty one.
    pub fn version(&self, plugin_type: &str) -> Value {
        self.run(self.args("version", None, Some(plugin_type)))
    }
}

static CNITOOL: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Builds our runtime on the command line (`cargo build -p cnitool --bin
/// cnitool`, debug profile) once per test process and returns the binary's
/// path, or the build failure as text.
pub fn try_cnitool_bin() -> Result<PathBuf, String> {
    CNITOOL
        .get_or_init(|| {
            let output = Command::new(cargo_executable())
                .args(["build", "-p", "cnitool", "--bin", "cnitool", "--quiet"])
                .current_dir(workspace_root())
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run cargo: {e}"))?;
            if !output.status.success() {
                return Err(format!(
                    "`cargo build -p cnitool --bin cnitool` failed ({}):\n{}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                ));
            }
            Ok(target_dir().join("debug").join("cnitool"))
        })
        .clone()
}

/// Builds `cnitool` once per test process and returns its path.
///
/// # Panics
/// If the build fails (the cargo output is part of the message).
pub fn cnitool_bin() -> PathBuf {
    try_cnitool_bin().unwrap_or_else(|e| panic!("{e}"))
}

/// Our runtime (`cni_invoke::Runtime`, through the `cnitool` binary) with
/// the same knobs as [`Driver`]: networks are looked up by name in a
/// configuration directory (`NETCONFPATH`), plugins on `CNI_PATH`, results
/// cached in `--cache-dir`. Runs with a cleared environment (plus `PATH`).
///
/// Every command returns a report shaped like the driver's:
/// `{"ok":true,"result":R|null}` or `{"ok":false,"error":E}` where `E` is the
/// CNI error JSON cnitool printed (exit status 1).
#[derive(Clone, Debug)]
pub struct Cnitool {
    bin: PathBuf,
    conf_dir: PathBuf,
    cni_path: Vec<PathBuf>,
    cache_dir: PathBuf,
    container_id: String,
    ifname: String,
    cni_args: Option<String>,
    cap_args: Option<Value>,
}

impl Cnitool {
    /// A runtime reading configurations from `conf_dir`, searching plugins
    /// in `cni_path` and caching results in `cache_dir`, with container id
    /// `cnitool-container`, ifname `eth0`, no CNI_ARGS and no capability
    /// args. Builds `cnitool` (once per process) via [`cnitool_bin`].
    pub fn new<I, P>(
        conf_dir: impl Into<PathBuf>,
        cni_path: I,
        cache_dir: impl Into<PathBuf>,
    ) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        Cnitool {
            bin: cnitool_bin(),
            conf_dir: conf_dir.into(),
            cni_path: cni_path.into_iter().map(Into::into).collect(),
            cache_dir: cache_dir.into(),
            container_id: "cnitool-container".to_owned(),
            ifname: "eth0".to_owned(),
            cni_args: None,
            cap_args: None,
        }
    }

    /// Sets `--container-id`.
    pub fn with_container_id(mut self, id: &str) -> Self {
        self.container_id = id.to_owned();
        self
    }

    /// Sets `--ifname`.
    pub fn with_ifname(mut self, ifname: &str) -> Self {
        self.ifname = ifname.to_owned();
        self
    }

    /// Sets `CNI_ARGS` (`K=V;K2=V2`).
    pub fn with_cni_args(mut self, args: &str) -> Self {
        self.cni_args = Some(args.to_owned());
        self
    }

    /// Sets `CAP_ARGS` (a JSON object of capability arguments).
    pub fn with_cap_args(mut self, caps: Value) -> Self {
        self.cap_args = Some(caps);
        self
    }

    /// Path of the `cnitool` binary.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The `CNI_PATH` value (entries joined with `:`).
    pub fn cni_path(&self) -> String {
        std::env::join_paths(&self.cni_path)
            .expect("CNI path entries contain no ':'")
            .to_string_lossy()
            .into_owned()
    }

    /// Runs `cnitool ARGS...` with `NETCONFPATH`, `CNI_PATH`, `CNI_ARGS`
    /// and `CAP_ARGS` set from this runtime, plus `--cache-dir`,
    /// `--container-id` and `--ifname`; returns the process outcome.
    pub fn run_outcome(&self, args: &[&str]) -> RawOutput {
        let conf_dir = self.conf_dir.to_str().expect("UTF-8 config dir");
        let cni_path = self.cni_path();
        let caps = self.cap_args.as_ref().map(Value::to_string);
        let mut env = vec![("NETCONFPATH", conf_dir), ("CNI_PATH", cni_path.as_str())];
        if let Some(a) = &self.cni_args {
            env.push(("CNI_ARGS", a));
        }
        if let Some(c) = &caps {
            env.push(("CAP_ARGS", c));
        }
        let mut argv: Vec<OsString> = vec![
            "--cache-dir".into(),
            self.cache_dir.as_os_str().to_owned(),
            "--container-id".into(),
            self.container_id.clone().into(),
            "--ifname".into(),
            self.ifname.clone().into(),
        ];
        argv.extend(args.iter().map(OsString::from));
        run_with_clean_env(&self.bin, argv, &env, b"")
    }

    /// Runs `cnitool ARGS...` and returns its report (see the type's docs).
    ///
    /// # Panics
    /// If cnitool exits with anything but 0 or 1 (misuse), or prints
    /// something other than one JSON value (or nothing, on success).
    pub fn run(&self, args: &[&str]) -> Value {
        let out = self.run_outcome(args);
        match out.status() {
            Some(0) if out.stdout.iter().all(u8::is_ascii_whitespace) => {
                serde_json::json!({"ok": true, "result": null})
            }
            Some(0) => serde_json::json!({"ok": true, "result": out.stdout_json()}),
            Some(1) => serde_json::json!({"ok": false, "error": out.stdout_json()}),
            _ => panic!("cnitool {args:?} failed: {out:?}"),
        }
    }

    /// `cnitool add NETWORK NETNS`.
    pub fn add(&self, network: &str, netns: &str) -> Value {
        self.run(&["add", network, netns])
    }

    /// `cnitool check NETWORK NETNS`.
    pub fn check(&self, network: &str, netns: &str) -> Value {
        self.run(&["check", network, netns])
    }

    /// `cnitool del NETWORK NETNS`.
    pub fn del(&self, network: &str, netns: &str) -> Value {
        self.run(&["del", network, netns])
    }

    /// `cnitool status NETWORK`.
    pub fn status(&self, network: &str) -> Value {
        self.run(&["status", network])
    }

    /// `cnitool gc NETWORK [--valid ID/IFNAME]...`.
    pub fn gc(&self, network: &str, valid: &[&str]) -> Value {
        let mut args = vec!["gc", network];
        for v in valid {
            args.extend(["--valid", v]);
        }
        self.run(&args)
    }
}

/// Panics with a clear message unless this process runs as root and
/// `ip` (iproute2) works: the namespace tests create network namespaces and
/// links. CI runs as root; elsewhere run them with `sudo -E cargo test`.
pub fn require_root_and_ip() {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .unwrap_or("?");
    if euid != "0" {
        panic!(
            "this test creates network namespaces and needs root (effective uid is {euid}); \
             run it as root (CI does), e.g. `sudo -E cargo test -p tests`"
        );
    }
    match Command::new("ip").arg("-V").stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!("`ip -V` failed ({}): install iproute2", out.status),
        Err(e) => panic!("cannot run `ip` ({e}): install iproute2 (`apt-get install iproute2`)"),
    }
}

/// Runs `ip ARGS...`; returns the outcome (never panics on failure).
pub fn ip(args: &[&str]) -> RawOutput {
    output_of(Command::new("ip").args(args), b"")
}

/// A network namespace `cni-rs-test-<pid>-<tag>` (made with `ip netns
/// add`) that is deleted when dropped, even when the test panics, together
/// with any host links registered with [`NetNs::delete_link_on_drop`].
#[derive(Debug)]
pub struct NetNs {
    name: String,
    host_links: Mutex<Vec<String>>,
}

impl NetNs {
    /// Creates the namespace (replacing a leftover of the same name).
    ///
    /// # Panics
    /// Via [`require_root_and_ip`] when not root or `ip` is missing, or if
    /// `ip netns add` fails.
    pub fn create(tag: &str) -> NetNs {
        require_root_and_ip();
        let name = format!("cni-rs-test-{}-{tag}", std::process::id());
        let _ = ip(&["netns", "del", &name]);
        let out = ip(&["netns", "add", &name]);
        if !out.success() {
            panic!("`ip netns add {name}` failed: {out:?}");
        }
        NetNs {
            name,
            host_links: Mutex::default(),
        }
    }

    /// The namespace's name (for `ip -n`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's path, as `CNI_NETNS`: `/var/run/netns/<name>`.
    pub fn path(&self) -> String {
        format!("/var/run/netns/{}", self.name)
    }

    /// Also deletes the host link `name` (e.g. a bridge a plugin creates)
    /// when this guard is dropped; deletes a leftover of it right away.
    pub fn delete_link_on_drop(&self, name: &str) {
        delete_host_link(name);
        self.host_links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.to_owned());
    }

    /// `ip -n <name> -j addr`: every link in the namespace with its
    /// addresses.
    ///
    /// # Panics
    /// If `ip` fails or prints no JSON.
    pub fn addrs(&self) -> Value {
        let out = ip(&["-n", &self.name, "-j", "addr"]);
        if !out.success() {
            panic!("`ip -n {} -j addr` failed: {out:?}", self.name);
        }
        out.stdout_json()
    }

    /// The link `ifname` in the namespace as [`NetNs::addrs`] shows it, or
    /// `None`; [`link_is_up`] and [`global_addrs`] read it.
    pub fn link(&self, ifname: &str) -> Option<Value> {
        self.addrs()
            .as_array()
            .into_iter()
            .flatten()
            .find(|l| l["ifname"] == ifname)
            .cloned()
    }
}

/// A script in `dir` named like `plugin` that runs it inside `host`
/// (`ip netns exec`), so a plugin's host side (links, packet filter
/// rules) lands in a namespace of the test; put `dir` on `CNI_PATH`.
///
/// # Panics
/// If the script cannot be written.
pub fn in_host_namespace(dir: &Path, plugin: &Path, host: &NetNs) -> PathBuf {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let name = plugin.file_name().expect("a file name");
    let wrapper = dir.join(name);
    let mut file = std::fs::File::create(&wrapper).expect("create the wrapper");
    writeln!(
        file,
        "#!/bin/sh\nexec ip netns exec {} {}",
        host.name(),
        plugin.display()
    )
    .expect("write the wrapper");
    drop(file);
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .expect("make the wrapper executable");
    wrapper
}

/// Whether a link, as `ip -j addr` shows it, is administratively up.
pub fn link_is_up(link: &Value) -> bool {
    link["flags"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == "UP"))
}

/// The addresses of a link, as `ip -j addr` shows it, as `a.b.c.d/len`;
/// link-local ones are left out (IPv6 derives them from a random MAC).
pub fn global_addrs(link: &Value) -> Vec<String> {
    link["addr_info"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["scope"] != "link")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap_or("?"), a["prefixlen"]))
        .collect()
}

impl Drop for NetNs {
    fn drop(&mut self) {
        for link in self
            .host_links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            delete_host_link(link);
        }
        let out = ip(&["netns", "del", &self.name]);
        if !out.success() {
            eprintln!("warning: `ip netns del {}` failed: {out:?}", self.name);
        }
    }
}

/// `ip link del <name>` when the link exists on the host.
pub fn delete_host_link(name: &str) {
    if host_link(name).is_some() {
        let out = ip(&["link", "del", name]);
        if !out.success() {
            eprintln!("warning: `ip link del {name}` failed: {out:?}");
        }
    }
}

/// The host link `name` as `ip -j addr show dev <name>` shows it, or `None`.
pub fn host_link(name: &str) -> Option<Value> {
    let out = ip(&["-j", "addr", "show", "dev", name]);
    if !out.success() {
        return None;
    }
    out.try_stdout_json()
        .ok()
        .and_then(|v| v.as_array().and_then(|a| a.first().cloned()))
}

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
