//! containerd's CRI, the path the kubelet takes, on our plugins: a private
//! containerd 1.6 (Debian's; its own root, state, socket and config) whose
//! CRI plugin reads a temporary CNI configuration directory and finds our
//! plugins in a temporary bin directory. Pod sandboxes are made through the
//! CRI gRPC API by `tests/cri/cri.py` (PyPI `grpcio` and
//! `container-runtime-interface-api`, in the venv
//! `scripts/install-test-deps.sh` makes), their sandbox image a busybox
//! that sleeps, built by `tests/cri/make_image.py` and imported with `ctr
//! -n k8s.io images import` (no registry).
//!
//! The network is containerd's default list, `bridge` (isGateway, ipMasq)
//! with `host-local`, then `portmap`, plus `bandwidth`; containerd adds its
//! own `loopback` call. What a kubelet relies on:
//! - the pod IP is reported (`PodSandboxStatus`), two pods reach each
//!   other, a `hostPort` is reachable from the host (127.0.0.1 and the
//!   bridge's address), the pod's `lo` is up;
//! - `kubernetes.io/ingress-bandwidth` / `egress-bandwidth` become a tbf
//!   of that rate on the host end and on the pod's ifb. containerd sends a
//!   burst of 4294967295 bits with them, so hundreds of megabytes pass
//!   before the rate bites: `shaping.rs` measures the rate itself, with a
//!   bucket of a sensible size;
//! - a containerd restart under a running pod keeps it and its network,
//!   and its removal then leaves nothing: no host end, ifb, bridge port,
//!   reservation, iptables or nft rule naming the sandbox, libcni cache
//!   entry or namespace.
//!
//! Needs root, containerd, runc and the venv (`scripts/install-test-deps.sh`);
//! fails, never skips, without them. Each test has its own daemon, bridge,
//! subnet in `10.219.0.0/16` and host port, so tests run in parallel.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cni_net::Netns;
use serde_json::{json, Value};
use tests::observe::{filter_rules, names_address, reserved_addresses, tcp_fetch};
use tests::{host_link, ip, plugin_bin_dir, require_root_and_ip, workspace_root, StdoutJson};

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// Where `scripts/install-test-deps.sh` installs what these tests need.
const HINT: &str = "run `scripts/install-test-deps.sh` (as root): it installs containerd \
     and runc, and the CRI client's venv (grpcio, container-runtime-interface-api)";

/// The sandbox image the daemon is told to use; imported, never pulled.
const SANDBOX_IMAGE: &str = "cnirs.test/pause:1";

/// The plugins the CRI plugin finds in its bin directory: ours.
const PLUGINS: [&str; 5] = ["bridge", "host-local", "portmap", "bandwidth", "loopback"];

/// What the daemon's log keeps, at most (its tail is shown on failure).
const LOG_LIMIT: usize = 256 << 10;

/// The venv's python: `$CNI_TESTS_CRI_VENV` or
/// `${XDG_CACHE_HOME:-$HOME/.cache}/cni-tests/cri-venv`, as the install
/// script makes it.
fn venv_python() -> PathBuf {
    let venv = std::env::var_os("CNI_TESTS_CRI_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                        .join(".cache")
                });
            cache.join("cni-tests").join("cri-venv")
        });
    let python = venv.join("bin").join("python3");
    assert!(python.is_file(), "{} is missing; {HINT}", python.display());
    python
}

/// A private containerd whose CRI plugin runs our plugins; see the module
/// docs. Dropping it removes every pod it still has, stops it, and deletes
/// its bridge and directories.
struct Containerd {
    tmp: tempfile::TempDir,
    daemon: Option<Child>,
    log: Arc<Mutex<String>>,
    python: PathBuf,
    network: String,
    bridge: String,
}

impl Containerd {
    /// Starts a daemon whose CNI list is containerd's default on `subnet`
    /// plus `bandwidth`, with the bridge `cri<pid><tag>`.
    fn start(tag: &str, subnet: &str) -> Containerd {
        require_root_and_ip();
        for tool in ["containerd", "ctr", "runc", "containerd-shim-runc-v2"] {
            let found = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(found, "`{tool}` is not on PATH; {HINT}");
        }
        let python = venv_python();
        let tmp = tempfile::Builder::new()
            .prefix(&format!("cri-{tag}-"))
            .tempdir()
            .expect("a temporary directory");
        let pid = std::process::id();
        let bridge = format!("cri{}{tag}", pid % 1_000_000);
        assert!(bridge.len() <= 15, "bridge name {bridge} too long");
        tests::delete_host_link(&bridge);
        let mut ctrd = Containerd {
            network: format!("cnirs-cri-{pid}-{tag}"),
            tmp,
            daemon: None,
            log: Arc::default(),
            python,
            bridge,
        };
        ctrd.write_config(subnet);
        ctrd.spawn();
        ctrd.import_sandbox_image();
        ctrd
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn socket(&self) -> PathBuf {
        self.dir("containerd.sock")
    }

    fn write_config(&self, subnet: &str) {
        for d in ["root", "state", "net.d", "bin", "ipam", "opt"] {
            fs::create_dir_all(self.dir(d)).expect("creating the daemon's directories");
        }
        for plugin in PLUGINS {
            std::os::unix::fs::symlink(plugin_bin_dir().join(plugin), self.dir("bin").join(plugin))
                .expect("linking a plugin into the bin directory");
        }
        let list = json!({
            "cniVersion": "1.0.0", "name": self.network,
            "plugins": [
                {"type": "bridge", "bridge": self.bridge, "isGateway": true, "ipMasq": true,
                 "promiscMode": true,
                 "ipam": {"type": "host-local", "dataDir": self.dir("ipam"),
                          "ranges": [[{"subnet": subnet}]],
                          "routes": [{"dst": "0.0.0.0/0"}]}},
                {"type": "portmap", "capabilities": {"portMappings": true}},
                {"type": "bandwidth", "capabilities": {"bandwidth": true}}
            ]
        });
        tests::write_json(&self.dir("net.d").join("10-pods.conflist"), &list);
        let path = |d: &str| format!("{:?}", self.dir(d).display().to_string());
        let config = format!(
            r#"version = 2
root = {root}
state = {state}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = {sock}
[ttrpc]
  address = {ttrpc}
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = {opt}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  restrict_oom_score_adj = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {bin}
    conf_dir = {netd}
    max_conf_num = 1
"#,
            root = path("root"),
            state = path("state"),
            sock = path("containerd.sock"),
            ttrpc = path("containerd-ttrpc.sock"),
            opt = path("opt"),
            bin = path("bin"),
            netd = path("net.d"),
        );
        fs::write(self.dir("config.toml"), config).expect("writing config.toml");
    }

    /// Starts the daemon and waits until it says it booted.
    fn spawn(&mut self) {
        let mut child = Command::new("containerd")
            .arg("--config")
            .arg(self.dir("config.toml"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start containerd: {e}; {HINT}"));
        let stderr = child.stderr.take().expect("the daemon's stderr");
        self.daemon = Some(child);
        let (ready, booted) = mpsc::channel();
        let log = Arc::clone(&self.log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("containerd successfully booted") {
                    let _ = ready.send(());
                }
                let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
                if log.len() > LOG_LIMIT {
                    let cut = log.len() - LOG_LIMIT / 2;
                    let cut = (cut..log.len())
                        .find(|&i| log.is_char_boundary(i))
                        .unwrap_or(0);
                    log.drain(..cut);
                }
                log.push_str(&line);
                log.push('\n');
            }
        });
        if booted.recv_timeout(Duration::from_secs(60)).is_err() {
            panic!("containerd did not boot in 60 s:\n{}", self.log_tail());
        }
    }

    /// Stops the daemon (SIGTERM, then SIGKILL after 20 s) and waits.
    fn stop_daemon(&mut self) {
        let Some(mut child) = self.daemon.take() else {
            return;
        };
        let pid = child.id() as libc::pid_t;
        // SAFETY: a signal to our own child, which we have not reaped.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(pid, libc::SIGTERM)
        };
        for _ in 0..200 {
            if child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A containerd restart: the daemon stops, pods keep running (their
    /// shims do), and a new daemon on the same state takes them back.
    fn restart(&mut self) {
        self.stop_daemon();
        self.spawn();
    }

    fn log_tail(&self) -> String {
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        let start = log.len().saturating_sub(8 << 10);
        let start = (start..log.len())
            .find(|&i| log.is_char_boundary(i))
            .unwrap_or(0);
        log[start..].to_owned()
    }

    fn import_sandbox_image(&self) {
        let tar = self.dir("sandbox-image.tar");
        let script = workspace_root().join("tests/cri/make_image.py");
        let out = tests::output_of(
            Command::new(&self.python)
                .arg(&script)
                .arg(&tar)
                .arg(SANDBOX_IMAGE),
            b"",
        );
        assert!(out.success(), "make_image.py: {out:?}");
        let out = tests::output_of(
            Command::new("ctr")
                .arg("--address")
                .arg(self.socket())
                .args([
                    "-n",
                    "k8s.io",
                    "images",
                    "import",
                    "--snapshotter",
                    "native",
                ])
                .arg(&tar),
            b"",
        );
        assert!(out.success(), "ctr images import: {out:?}");
    }

    /// Runs `cri.py SOCKET ARGS...`: its JSON answer, or `Err` with its
    /// message.
    fn try_cri(&self, args: &[&str]) -> Result<Value, String> {
        let out = tests::output_of(
            Command::new(&self.python)
                .arg(workspace_root().join("tests/cri/cri.py"))
                .arg(self.socket())
                .args(args),
            b"",
        );
        if out.success() {
            Ok(out.stdout_json())
        } else {
            Err(format!("cri.py {args:?}: {out:?}"))
        }
    }

    /// Like [`Containerd::try_cri`], panicking with the daemon's log.
    fn cri(&self, args: &[&str]) -> Value {
        self.try_cri(args)
            .unwrap_or_else(|e| panic!("{e}\ncontainerd's log:\n{}", self.log_tail()))
    }

    /// `RunPodSandbox` of pod `name` with `extra` options (`--port`,
    /// `--annotation`): the sandbox's status.
    fn run_pod(&self, name: &str, extra: &[&str]) -> Pod {
        let uid = format!("uid-{}-{name}", std::process::id());
        let mut args = vec!["run", name, &uid, "cnirs-test"];
        args.extend(extra);
        Pod(self.cri(&args))
    }

    /// `StopPodSandbox` then `RemovePodSandbox`, as the kubelet does.
    fn remove_pod(&self, pod: &Pod) {
        self.cri(&["stop", pod.id()]);
        self.cri(&["remove", pod.id()]);
    }

    /// The addresses `host-local` holds for the network.
    fn reservations(&self) -> Vec<String> {
        reserved_addresses(&self.dir("ipam").join(&self.network))
    }

    /// The bridge's ports.
    fn bridge_ports(&self) -> Vec<String> {
        ip(&["-j", "link", "show", "master", &self.bridge])
            .try_stdout_json()
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|l| l["ifname"].as_str().map(str::to_owned))
            .collect()
    }

    /// The bridge's address, which `isGateway` gives it.
    fn gateway(&self) -> String {
        let link = host_link(&self.bridge).expect("the bridge exists");
        tests::global_addrs(&link)
            .into_iter()
            .find(|a| !a.contains(':'))
            .and_then(|a| a.split('/').next().map(str::to_owned))
            .expect("the bridge has an IPv4 address")
    }

    /// Asserts that nothing of `pod` is left: see the module docs.
    fn assert_nothing_left(&self, pod: &Pod) {
        let id = pod.id();
        for link in pod.host_links().iter().filter(|l| **l != self.bridge) {
            assert_eq!(host_link(link), None, "host link {link} of {id} left");
        }
        assert_eq!(self.bridge_ports(), Vec::<String>::new(), "bridge ports");
        assert_eq!(self.reservations(), Vec::<String>::new(), "reservations");
        let rules = filter_rules(None);
        assert!(
            !rules.contains(id) && !names_address(&rules, pod.ip()),
            "rules still name the pod {id} ({}):\n{rules}",
            pod.ip()
        );
        let cached: Vec<String> = fs::read_dir("/var/lib/cni/results")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(id))
            .collect();
        assert_eq!(cached, Vec::<String>::new(), "libcni cache entries");
        assert!(
            !Path::new(pod.netns()).exists(),
            "namespace {} left",
            pod.netns()
        );
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        if self.daemon.is_some() {
            if let Ok(list) = self.try_cri(&["list"]) {
                for pod in list["items"].as_array().into_iter().flatten() {
                    if let Some(id) = pod["id"].as_str() {
                        for step in ["stop", "remove"] {
                            if let Err(e) = self.try_cri(&[step, id]) {
                                eprintln!("warning: {e}");
                            }
                        }
                    }
                }
            }
        }
        self.stop_daemon();
        tests::delete_host_link(&self.bridge);
    }
}

/// A pod sandbox as `cri.py` reports it (`PodSandboxStatus`, verbose).
#[derive(Debug, Clone)]
struct Pod(Value);

impl Pod {
    fn id(&self) -> &str {
        self.0["id"].as_str().unwrap_or_default()
    }

    fn ip(&self) -> &str {
        self.0["ip"].as_str().unwrap_or_default()
    }

    fn netns(&self) -> &str {
        self.0["netns"].as_str().unwrap_or_default()
    }

    /// The host-side links of its CNI result (`Sandbox` empty): the
    /// bridge, the host end of its veth and its ifb.
    fn host_links(&self) -> Vec<String> {
        self.0["cniResult"]["Interfaces"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, i)| i["Sandbox"] == "")
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Runs `program ARGS...` in the pod's network namespace.
    fn exec(&self, program: &str, args: &[&str]) -> tests::RawOutput {
        tests::output_of(
            Command::new("nsenter")
                .arg(format!("--net={}", self.netns()))
                .arg(program)
                .args(args),
            b"",
        )
    }

    /// Serves `greeting` on `port` in the pod's namespace, to every
    /// connection, on a thread of its own.
    fn serve(&self, port: u16, greeting: &'static str) {
        let ns = Netns::open(self.netns()).expect("open the pod's namespace");
        let listener = ns
            .run(|_| -> Result<TcpListener, AnyError> { Ok(TcpListener::bind(("0.0.0.0", port))?) })
            .expect("listen in the pod");
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let _ = stream.write_all(greeting.as_bytes());
            }
        });
    }
}

/// The tbf on `dev`, as `tc -j qdisc show dev DEV` prints it.
fn tbf(dev: &str) -> Option<Value> {
    let out = tests::output_of(
        Command::new("tc").args(["-j", "qdisc", "show", "dev", dev]),
        b"",
    );
    out.try_stdout_json()
        .ok()?
        .as_array()?
        .iter()
        .find(|q| q["kind"] == "tbf")
        .cloned()
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn cri_pods_on_containerds_default_list_get_their_ip_reach_each_other_and_their_host_port() {
    let ctrd = Containerd::start("a", "10.219.1.0/24");
    let port = tests::free_port();
    let mapping = format!("tcp:80:{port}");
    let web = ctrd.run_pod(
        "web",
        &[
            "--port",
            &mapping,
            "--annotation",
            "kubernetes.io/ingress-bandwidth=10M",
            "--annotation",
            "kubernetes.io/egress-bandwidth=20M",
        ],
    );
    let client = ctrd.run_pod("client", &[]);

    // The pod IP is reported, from the subnet, and is the one in eth0.
    for pod in [&web, &client] {
        assert_eq!(pod.0["state"], "SANDBOX_READY", "{pod:?}");
        assert!(pod.ip().starts_with("10.219.1."), "{pod:?}");
        let eth0 = pod.exec("ip", &["-o", "-4", "addr", "show", "eth0"]);
        assert!(
            eth0.stdout_str().contains(&format!("inet {}/24", pod.ip())),
            "{eth0:?}"
        );
        // containerd's separate loopback call: lo is up with 127.0.0.1.
        let lo = pod.exec("ip", &["-o", "-4", "addr", "show", "lo"]);
        assert!(lo.stdout_str().contains("inet 127.0.0.1/8"), "{lo:?}");
        let ping = pod.exec("ping", &["-c", "1", "-W", "5", "127.0.0.1"]);
        assert!(ping.success(), "ping 127.0.0.1 in the pod: {ping:?}");
    }
    assert_ne!(web.ip(), client.ip());

    // Two pods reach each other.
    let ping = client.exec("ping", &["-c", "1", "-W", "5", web.ip()]);
    assert!(ping.success(), "client to web: {ping:?}");
    let ping = web.exec("ping", &["-c", "1", "-W", "5", client.ip()]);
    assert!(ping.success(), "web to client: {ping:?}");

    // The hostPort is reachable from the host.
    web.serve(80, "hello from web");
    let gateway = ctrd.gateway();
    for addr in [format!("127.0.0.1:{port}"), format!("{gateway}:{port}")] {
        assert_eq!(tcp_fetch(&addr).as_deref(), Ok("hello from web"), "{addr}");
    }
    assert_eq!(
        tcp_fetch(&format!("{}:80", web.ip())).as_deref(),
        Ok("hello from web")
    );

    // The annotations became the rates of the two tbfs.
    let links = web.host_links();
    let ifb = links
        .iter()
        .find(|l| l.starts_with("bwp"))
        .unwrap_or_else(|| panic!("no ifb in the result: {web:?}"));
    let host_end = links
        .iter()
        .find(|l| *l != ifb && **l != ctrd.bridge)
        .unwrap_or_else(|| panic!("no host end in the result: {web:?}"));
    let ingress = tbf(host_end).unwrap_or_else(|| panic!("no tbf on {host_end}"));
    assert_eq!(
        ingress["options"]["rate"],
        json!(10_000_000 / 8),
        "{ingress}"
    );
    let egress = tbf(ifb).unwrap_or_else(|| panic!("no tbf on {ifb}"));
    assert_eq!(egress["options"]["rate"], json!(20_000_000 / 8), "{egress}");
    for link in client.host_links().iter().filter(|l| **l != ctrd.bridge) {
        assert_eq!(tbf(link), None, "client is not shaped ({link})");
    }

    ctrd.remove_pod(&web);
    assert!(
        tcp_fetch(&format!("127.0.0.1:{port}")).is_err(),
        "port still open"
    );
    ctrd.remove_pod(&client);
    ctrd.assert_nothing_left(&web);
    ctrd.assert_nothing_left(&client);
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_containerd_restart_under_a_running_pod_then_its_removal_leave_nothing() {
    let mut ctrd = Containerd::start("b", "10.219.2.0/24");
    let port = tests::free_port();
    let mapping = format!("tcp:80:{port}");
    let pod = ctrd.run_pod(
        "survivor",
        &[
            "--port",
            &mapping,
            "--annotation",
            "kubernetes.io/egress-bandwidth=5M",
        ],
    );
    pod.serve(80, "still here");

    ctrd.restart();

    let after = Pod(ctrd.cri(&["status", pod.id()]));
    assert_eq!(after.0["state"], "SANDBOX_READY", "{after:?}");
    assert_eq!(after.ip(), pod.ip(), "the pod IP after the restart");
    assert_eq!(
        tcp_fetch(&format!("127.0.0.1:{port}")).as_deref(),
        Ok("still here"),
        "the hostPort after the restart"
    );
    assert_eq!(ctrd.reservations(), vec![pod.ip().to_owned()]);

    ctrd.remove_pod(&pod);
    ctrd.assert_nothing_left(&pod);
}
