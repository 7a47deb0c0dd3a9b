//! Podman as a test peer: a real container engine, nobody here wrote,
//! running containers on networks made of our plugins.
//!
//! [`Podman`] is Debian's Podman 4.3.1 with its CNI backend, confined to a
//! temporary directory: its configuration (`CONTAINERS_CONF`), storage
//! (`CONTAINERS_STORAGE_CONF`), run-time state, network configurations and
//! a busybox container root (`podman run --rootfs`, no image pulls). What
//! Podman keeps at fixed paths, the libcni result cache
//! (`/var/lib/cni/results`) and the namespaces (`/run/netns`), is cleaned
//! on drop, only for this instance's networks and containers: other tests
//! run Podman on the same machine at the same time.
//!
//! Settings measured on these machines, written into `containers.conf`:
//! runc (crun 1.8 refuses the hybrid cgroup setup), no default ulimits
//! (raising them needs a capability the machine lacks), the CNI backend
//! (never netavark), file events (no journald). Podman 4.3.1 vendors
//! libcni 1.1.2, which cannot read 1.1.0 results: networks are 1.0.0 or
//! older.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::{require_root_and_ip, RawOutput, StdoutJson};

/// libcni's result cache, a fixed path for Podman's CNI backend.
pub const LIBCNI_RESULTS: &str = "/var/lib/cni/results";

/// Where `host-local` keeps the reservations of a network whose
/// configuration names no `dataDir`, as Podman's lists do.
pub const HOST_LOCAL_DIR: &str = "/var/lib/cni/networks";

/// Where `scripts/install-test-deps.sh` puts what Podman needs.
const PODMAN_HINT: &str = "run `scripts/install-test-deps.sh` (as root) to install podman, \
     runc, conmon and busybox-static";

/// A confined Podman; see the module docs. Containers it started and its
/// networks' cache entries are removed on drop, also when a test panics.
#[derive(Debug)]
pub struct Podman {
    tmp: tempfile::TempDir,
    prefix: String,
    networks: Mutex<Vec<String>>,
    host_links: Mutex<Vec<String>>,
}

impl Podman {
    /// A Podman whose networks find plugins in `plugin_dirs`, in that
    /// order; `tag` makes its network names unique (with the pid).
    ///
    /// # Panics
    /// When not root, or when Podman, runc, conmon or a static busybox is
    /// missing (naming `scripts/install-test-deps.sh`).
    pub fn new(tag: &str, plugin_dirs: &[PathBuf]) -> Podman {
        require_root_and_ip();
        for tool in ["podman", "runc", "conmon"] {
            let found = Command::new(tool)
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(found, "`{tool} --version` failed; {PODMAN_HINT}");
        }
        let tmp = tempfile::Builder::new()
            .prefix(&format!("podman-{tag}-"))
            .tempdir()
            .expect("creating a temporary directory");
        let podman = Podman {
            prefix: format!("cnirs-{}-{tag}", std::process::id()),
            tmp,
            networks: Mutex::default(),
            host_links: Mutex::default(),
        };
        podman.write_config(plugin_dirs);
        podman.make_rootfs();
        podman
    }

    fn write_config(&self, plugin_dirs: &[PathBuf]) {
        let root = self.tmp.path();
        for dir in ["net.d", "storage", "run", "tmp", "data"] {
            fs::create_dir_all(root.join(dir)).expect("creating Podman's directories");
        }
        let dirs: Vec<String> = plugin_dirs
            .iter()
            .map(|d| format!("{:?}", d.display().to_string()))
            .collect();
        let conf = format!(
            "[containers]\n\
             default_ulimits = []\n\
             [engine]\n\
             runtime = \"runc\"\n\
             cgroup_manager = \"cgroupfs\"\n\
             events_logger = \"file\"\n\
             tmp_dir = {tmp:?}\n\
             [network]\n\
             network_backend = \"cni\"\n\
             cni_plugin_dirs = [{dirs}]\n\
             network_config_dir = {netd:?}\n",
            tmp = root.join("tmp").display().to_string(),
            dirs = dirs.join(", "),
            netd = root.join("net.d").display().to_string(),
        );
        fs::write(root.join("containers.conf"), conf).expect("writing containers.conf");
        let storage = format!(
            "[storage]\ndriver = \"vfs\"\ngraphroot = {:?}\nrunroot = {:?}\n",
            root.join("storage").display().to_string(),
            root.join("run").display().to_string(),
        );
        fs::write(root.join("storage.conf"), storage).expect("writing storage.conf");
    }

    /// A container root: the static busybox and its applets on `PATH`.
    fn make_rootfs(&self) {
        let root = self.rootfs();
        for dir in ["bin", "etc", "proc", "sys", "dev", "tmp", "run"] {
            fs::create_dir_all(root.join(dir)).expect("creating the container root");
        }
        fs::copy("/bin/busybox", root.join("bin/busybox"))
            .unwrap_or_else(|e| panic!("copying /bin/busybox ({e}); {PODMAN_HINT}"));
        for applet in [
            "sh", "ip", "cat", "ping", "nc", "sleep", "true", "echo", "ls", "grep", "timeout",
        ] {
            std::os::unix::fs::symlink("busybox", root.join("bin").join(applet))
                .expect("linking a busybox applet");
        }
    }

    /// The container root handed to `podman run --rootfs`.
    pub fn rootfs(&self) -> PathBuf {
        self.tmp.path().join("rootfs")
    }

    /// A directory for the tests' own files (IPAM data, debug files).
    pub fn data_dir(&self) -> PathBuf {
        self.tmp.path().join("data")
    }

    /// The full name of this instance's network `short`.
    pub fn network_name(&self, short: &str) -> String {
        format!("{}-{short}", self.prefix)
    }

    /// Writes the configuration list `net.d/<name>.conflist` for the
    /// network `short` with `plugins` at `cni_version`; returns the
    /// network's full name, for `--network`.
    pub fn add_network(&self, short: &str, cni_version: &str, plugins: Value) -> String {
        let name = self.network_name(short);
        let list = json!({"cniVersion": cni_version, "name": name, "plugins": plugins});
        crate::write_json(
            &self
                .tmp
                .path()
                .join("net.d")
                .join(format!("{name}.conflist")),
            &list,
        );
        self.networks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.clone());
        name
    }

    /// `podman network create [OPTIONS...] NAME` for the network `short`:
    /// the list Podman writes itself. Returns the network's full name; it
    /// is removed (`podman network rm -f`, its `host-local` directory under
    /// [`HOST_LOCAL_DIR`]) on drop at the latest.
    ///
    /// # Panics
    /// If Podman refuses.
    pub fn create_network(&self, short: &str, options: &[&str]) -> String {
        let name = self.network_name(short);
        self.networks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.clone());
        let mut args = vec!["network", "create"];
        args.extend(options);
        args.push(&name);
        let out = self.podman(&args);
        assert!(out.success(), "podman network create failed: {out:?}");
        name
    }

    /// The list Podman keeps for `network` (`net.d/<network>.conflist`).
    pub fn network_list(&self, network: &str) -> Value {
        crate::read_json(
            &self
                .tmp
                .path()
                .join("net.d")
                .join(format!("{network}.conflist")),
        )
    }

    /// A host link name unique to this instance (`tag` at most 4 bytes),
    /// deleted on drop: for the bridge a network creates and keeps.
    pub fn host_link(&self, tag: &str) -> String {
        let name = format!("cr{}{tag}", std::process::id() % 1_000_000);
        crate::delete_host_link(&name);
        self.host_links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.clone());
        name
    }

    /// Runs `podman ARGS...` with this instance's configuration.
    pub fn podman(&self, args: &[&str]) -> RawOutput {
        let root = self.tmp.path();
        let mut podman = Command::new("podman");
        podman
            .args(args)
            .env("CONTAINERS_CONF", root.join("containers.conf"))
            .env("CONTAINERS_STORAGE_CONF", root.join("storage.conf"));
        cni_invoke::exec_raw(&mut podman, b"", None)
            .unwrap_or_else(|e| panic!("cannot run podman: {e}; {PODMAN_HINT}"))
    }

    /// `podman run --rm --network NETWORK [OPTIONS...] --rootfs ROOT sh -c
    /// SCRIPT`: the container's outcome (its output on stdout).
    pub fn run(&self, network: &str, options: &[&str], script: &str) -> RawOutput {
        let rootfs = self.rootfs().display().to_string();
        let mut args = vec!["run", "--rm", "--network", network];
        args.extend(options);
        args.extend(["--rootfs", &rootfs, "sh", "-c", script]);
        self.podman(&args)
    }

    /// Starts a container that sleeps on `network` (`podman run -d`) and
    /// returns it; it is removed on drop of this instance at the latest.
    /// Run servers in it with [`Podman::exec`] (`podman exec -d`).
    ///
    /// # Panics
    /// If Podman cannot start it.
    pub fn start(&self, network: &str, options: &[&str]) -> Container {
        let rootfs = self.rootfs().display().to_string();
        let mut args = vec!["run", "-d", "--network", network];
        args.extend(options);
        args.extend(["--rootfs", &rootfs, "sleep", "600"]);
        let out = self.podman(&args);
        assert!(out.success(), "podman run -d failed: {out:?}");
        let id = out.stdout_str().trim().to_owned();
        let inspect = self.podman(&["inspect", &id]);
        assert!(inspect.success(), "podman inspect failed: {inspect:?}");
        let settings = &inspect.stdout_json()[0]["NetworkSettings"];
        Container {
            id,
            netns: PathBuf::from(settings["SandboxKey"].as_str().unwrap_or_default()),
            networks: settings["Networks"].clone(),
        }
    }

    /// `podman exec CONTAINER sh -c SCRIPT`.
    pub fn exec(&self, container: &Container, script: &str) -> RawOutput {
        self.podman(&["exec", &container.id, "sh", "-c", script])
    }

    /// `podman exec -d CONTAINER sh -c SCRIPT`: runs `SCRIPT` in the
    /// background (a server), returns once it started.
    pub fn exec_detached(&self, container: &Container, script: &str) -> RawOutput {
        self.podman(&["exec", "-d", &container.id, "sh", "-c", script])
    }

    /// `podman rm -f -t 0 CONTAINER`.
    ///
    /// # Panics
    /// If Podman fails to remove it.
    pub fn remove(&self, container: &Container) {
        let out = self.podman(&["rm", "-f", "-t", "0", &container.id]);
        assert!(out.success(), "podman rm failed: {out:?}");
    }

    /// The libcni cache entries of `network` (`<network>-<id>-<ifname>`).
    pub fn cache_entries(&self, network: &str) -> Vec<PathBuf> {
        let prefix = format!("{network}-");
        fs::read_dir(LIBCNI_RESULTS)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect()
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        // Podman runs the DELs and removes the namespaces itself.
        let out = self.podman(&["rm", "-a", "-f", "-t", "0"]);
        if !out.success() {
            eprintln!("warning: podman rm -a failed: {out:?}");
        }
        for network in self
            .networks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            for entry in self.cache_entries(network) {
                let _ = fs::remove_file(entry);
            }
            let _ = self.podman(&["network", "rm", "-f", network]);
            let _ = fs::remove_dir_all(Path::new(HOST_LOCAL_DIR).join(network));
        }
        for link in self
            .host_links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            crate::delete_host_link(link);
        }
    }
}

/// A container started by [`Podman::start`].
#[derive(Debug, Clone)]
pub struct Container {
    /// Podman's container id.
    pub id: String,
    /// Its network namespace (`/run/netns/cni-...`).
    pub netns: PathBuf,
    /// `NetworkSettings.Networks` from `podman inspect`: per network, the
    /// address, gateway and MAC Podman read from the CNI result.
    pub networks: Value,
}

impl Container {
    /// The address Podman reports for `network` (`IPAddress`).
    pub fn address(&self, network: &str) -> String {
        self.networks[network]["IPAddress"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Whether its namespace is still mounted.
    pub fn netns_exists(&self) -> bool {
        Path::new(&self.netns).exists()
    }
}
