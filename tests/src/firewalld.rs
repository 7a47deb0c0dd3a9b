//! A private firewalld for the tests: Debian's `firewalld` on a
//! `dbus-daemon` of its own (a unix socket in a temporary directory, never
//! the host's bus), in a network namespace of its own so the nftables it
//! programs stay there. Both come from `scripts/install-test-deps.sh`; the
//! tests fail when they are missing. Stopped when dropped.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cni_netfilter::firewalld::Firewalld;

use crate::INSTALL_HINT;

/// How long firewalld may take to own its name: it starts in one or two
/// seconds alone, much longer on a machine busy building.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A bus policy that lets anyone own and call anything: the bus is ours
/// alone. `<type>system</type>` makes dbus-daemon behave as a system bus
/// (EXTERNAL authentication), as firewalld expects.
const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=SOCKET</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"#;

/// firewalld's own settings: the nftables backend, no logging of drops.
/// Zones come from the package (`/usr/lib/firewalld`).
const FIREWALLD_CONF: &str =
    "DefaultZone=public\nFirewallBackend=nftables\nCleanupOnExit=yes\nLogDenied=off\n";

/// A running dbus-daemon, and a firewalld on it unless started without.
pub struct PrivateFirewalld {
    dir: tempfile::TempDir,
    address: String,
    bus: Child,
    firewalld: Option<Child>,
}

impl PrivateFirewalld {
    /// Starts the bus and firewalld, and waits until firewalld owns its
    /// name.
    ///
    /// # Panics
    /// When either is not installed, or firewalld does not own its name
    /// within two minutes (its log is in the message).
    pub fn start() -> PrivateFirewalld {
        let mut fw = PrivateFirewalld::bus_only();
        let etc = fw.dir.path().join("etc");
        fs::create_dir(&etc).expect("firewalld config directory");
        fs::write(etc.join("firewalld.conf"), FIREWALLD_CONF).expect("firewalld.conf");
        let log = fs::File::create(fw.log_path()).expect("firewalld log");
        // firewalld makes its runtime directory when it does not see it
        // (exists, then mkdir): two starting at once on a fresh machine
        // race there and the loser exits with EEXIST. Made beforehand.
        fs::create_dir_all("/run/firewalld").expect("/run/firewalld");
        // `unshare --net` execs firewalld in a new network namespace, which
        // goes away with it.
        let child = Command::new("unshare")
            .args(["--net", "--", "firewalld", "--nofork", "--nopid"])
            .arg("--system-config")
            .arg(&etc)
            .args(["--log-target", "console"])
            .env("DBUS_SYSTEM_BUS_ADDRESS", &fw.address)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run firewalld ({e}); {INSTALL_HINT}"));
        fw.firewalld = Some(child);
        fw.wait_until_running();
        fw
    }

    /// Starts only the bus: nobody owns firewalld's name on it.
    ///
    /// # Panics
    /// When `dbus-daemon` is not installed or does not start.
    pub fn bus_only() -> PrivateFirewalld {
        let dir = tempfile::Builder::new()
            .prefix(&format!("cni-firewalld-test-{}-", std::process::id()))
            .tempdir()
            .expect("temporary directory");
        let socket = dir.path().join("bus");
        let config = dir.path().join("bus.conf");
        fs::write(
            &config,
            BUS_CONFIG.replace("SOCKET", socket.to_str().expect("UTF-8 temp dir")),
        )
        .expect("bus config");
        let mut bus = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run dbus-daemon ({e}); {INSTALL_HINT}"));
        // dbus-daemon prints its address once it listens: that is the
        // readiness signal.
        let mut line = String::new();
        let stdout = bus.stdout.take().expect("piped stdout");
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("dbus-daemon's address");
        if line.trim().is_empty() {
            let _ = bus.kill();
            let _ = bus.wait();
            panic!("dbus-daemon exited without printing its address");
        }
        PrivateFirewalld {
            address: format!("unix:path={}", socket.display()),
            dir,
            bus,
            firewalld: None,
        }
    }

    /// The bus address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The process id of firewalld, to enter its network namespace
    /// (`nsenter -t PID -n nft list ruleset`).
    pub fn pid(&self) -> Option<u32> {
        self.firewalld.as_ref().map(Child::id)
    }

    /// What firewalld logged so far.
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("firewalld.log")
    }

    /// Polls the bus until firewalld owns its name, with a deadline.
    fn wait_until_running(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(_)) = Firewalld::connect(&self.address) {
                return;
            }
            let exited = self
                .firewalld
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                panic!("firewalld exited ({status}):\n{}", self.log());
            }
            if Instant::now() > deadline {
                panic!(
                    "firewalld did not own its name within {START_TIMEOUT:?}:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The nftables ruleset firewalld made, in its namespace.
    pub fn ruleset(&self) -> String {
        let pid = self.pid().expect("firewalld is running").to_string();
        let out = Command::new("nsenter")
            .args(["-t", &pid, "-n", "nft", "list", "ruleset"])
            .output()
            .expect("nsenter nft");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Stops firewalld, leaving the bus running, and waits until the bus
    /// has seen it go (its name has no owner).
    pub fn stop_firewalld(&mut self) {
        self.kill_firewalld();
        let deadline = Instant::now() + START_TIMEOUT;
        while !matches!(Firewalld::connect(&self.address), Ok(None)) {
            assert!(Instant::now() < deadline, "the bus still lists firewalld");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill_firewalld(&mut self) {
        if let Some(mut child) = self.firewalld.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateFirewalld {
    fn drop(&mut self) {
        self.kill_firewalld();
        let _ = self.bus.kill();
        let _ = self.bus.wait();
    }
}
