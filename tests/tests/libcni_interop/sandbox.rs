//! The scratch directory a scenario runs in (laid out as the crate docs
//! show), the noop installed in it, and what can be read back from it:
//! debug files, libcni's cache, the files below a directory.

use std::cell::Cell;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tests::{
    base64_decode, files_below, plugin_bin_dir, read_json, reference_noop, reference_plugin_dir,
    write_json, Driver,
};

use crate::differences::d3_debug_file_newer_fields;

/// Which `noop` implementation a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Reference,
    Ours,
}

impl Flavor {
    pub fn noop(self) -> PathBuf {
        match self {
            Flavor::Reference => reference_noop(),
            // A failing `cargo build -p plugins-sample` fails the test here.
            Flavor::Ours => plugin_bin_dir().join("noop"),
        }
    }
}

/// A scratch directory laid out as described in the module docs.
pub struct Sandbox {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    flavor: Cell<Flavor>,
    stderr: Arc<Mutex<String>>,
}

impl Sandbox {
    pub fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("cni-interop-")
            .tempdir()
            .expect("creating a temporary directory");
        let root = tmp.path().to_path_buf();
        Sandbox {
            _tmp: tmp,
            root,
            flavor: Cell::new(Flavor::Reference),
            stderr: Arc::default(),
        }
    }

    /// Empties the sandbox and installs `flavor`'s noop as `bin/noop`.
    pub fn reset(&self, flavor: Flavor) {
        for entry in fs::read_dir(&self.root).expect("listing sandbox") {
            let path = entry.expect("sandbox entry").path();
            if path.is_dir() && !path.is_symlink() {
                fs::remove_dir_all(&path).expect("wiping sandbox");
            } else {
                fs::remove_file(&path).expect("wiping sandbox");
            }
        }
        for dir in ["bin", "cache", "ipam"] {
            fs::create_dir_all(self.root.join(dir)).expect("creating sandbox dirs");
        }
        symlink(flavor.noop(), self.bin().join("noop")).expect("linking noop");
        symlink(
            reference_plugin_dir().join("host-local"),
            self.bin().join("host-local"),
        )
        .expect("linking host-local");
        self.flavor.set(flavor);
        self.take_stderr();
    }

    pub fn flavor(&self) -> Flavor {
        self.flavor.get()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn bin(&self) -> PathBuf {
        self.path("bin")
    }

    pub fn noop(&self) -> PathBuf {
        self.bin().join("noop")
    }

    pub fn path_str(&self, rel: &str) -> String {
        self.path(rel).to_str().expect("UTF-8 temp path").to_owned()
    }

    /// A driver for this sandbox; whatever it prints on stderr (plugin
    /// stderr forwarded by libcni) is collected in [`Sandbox::take_stderr`].
    pub fn driver(&self) -> Driver {
        Driver::new([self.bin()], self.path("cache")).with_stderr_log(self.stderr.clone())
    }

    /// Everything the drivers printed on stderr since the last call.
    pub fn take_stderr(&self) -> String {
        std::mem::take(&mut *self.stderr.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Writes `value` to `<tmp>/<name>` and returns the path.
    pub fn write(&self, name: &str, value: &Value) -> PathBuf {
        let p = self.path(name);
        write_json(&p, value);
        p
    }

    /// Applies `normalise` to `observation` when the run uses our noop: the
    /// hook through which every documented difference is normalised.
    pub fn ours(&self, observation: &mut Value, normalise: impl FnOnce(&mut Value)) {
        if self.flavor() == Flavor::Ours {
            normalise(observation);
        }
    }

    /// The noop debug file `<tmp>/<name>` as the plugin left it: parsed,
    /// with `CmdArgs.StdinData` also decoded into `CmdArgs.StdinJSON`, and
    /// byte for byte under `$raw` (key order and encoding count too).
    pub fn debug_as_written(&self, name: &str) -> Value {
        let path = self.path(name);
        let raw =
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let mut d = read_json(&path);
        d["$raw"] = Value::String(raw);
        if let Some(b64) = d["CmdArgs"]["StdinData"].as_str() {
            let bytes = base64_decode(b64);
            d["CmdArgs"]["StdinJSON"] = serde_json::from_slice(&bytes).unwrap_or_else(
                |e| json!({ "notJSON": String::from_utf8_lossy(&bytes), "error": e.to_string() }),
            );
        }
        d
    }

    /// [`Sandbox::debug_as_written`], with ours normalised for difference (3).
    pub fn debug(&self, name: &str) -> Value {
        let mut d = self.debug_as_written(name);
        self.ours(&mut d, d3_debug_file_newer_fields);
        d
    }

    /// libcni's cache file for (network, container, ifname), `null` if
    /// absent; `config` is also decoded into `configJSON`.
    pub fn cache_entry(&self, net: &str, container: &str, ifname: &str) -> Value {
        let p = self
            .path("cache/results")
            .join(format!("{net}-{container}-{ifname}"));
        if !p.exists() {
            return Value::Null;
        }
        let mut c = read_json(&p);
        if let Some(b64) = c["config"].as_str() {
            c["configJSON"] = serde_json::from_slice(&base64_decode(b64)).unwrap_or(Value::Null);
        }
        c
    }

    /// Sorted `name: content` of every file below `<tmp>/<rel>`.
    pub fn files(&self, rel: &str) -> Value {
        files_below(&self.path(rel))
    }
}
