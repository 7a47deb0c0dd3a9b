//! A real etcd for the etcd store's tests: Debian's `etcd` on 127.0.0.1,
//! on free ports, with a temporary data directory, stopped when dropped.
//! Read back through `etcdctl`. Both come from `scripts/install-test-deps.sh`
//! (etcd-server, etcd-client); the tests fail when they are missing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::INSTALL_HINT;

/// A running (or stopped) single-member etcd.
pub struct Etcd {
    data: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    /// Behind a lock so that a test can stop and restart etcd while other
    /// threads use it.
    child: Mutex<Option<Child>>,
}

impl Etcd {
    /// Starts etcd and waits until it answers.
    ///
    /// # Panics
    /// When `etcd` is not installed, or does not answer within 20 s.
    pub fn start() -> Etcd {
        let data = tempfile::Builder::new()
            .prefix("cni-etcd-test-")
            .tempdir()
            .expect("temporary directory");
        let etcd = Etcd {
            data,
            client_port: free_port(),
            peer_port: free_port(),
            child: Mutex::new(None),
        };
        etcd.restart();
        etcd
    }

    /// `http://127.0.0.1:<port>`, as the store's `endpoints` take it.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The pid of the running etcd, to kill it from another thread.
    pub fn pid(&self) -> Option<i32> {
        self.child()
            .as_ref()
            .and_then(|c| i32::try_from(c.id()).ok())
    }

    fn child(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kills etcd (SIGKILL), as a crash or a lost node would.
    pub fn stop(&self) {
        if let Some(mut child) = self.child().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data: what was committed is
    /// still there.
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub fn restart(&self) {
        self.stop();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let bin = PathBuf::from("/usr/bin/etcd");
        assert!(
            bin.is_file(),
            "etcd is missing ({} not found); {INSTALL_HINT}",
            bin.display()
        );
        let log = std::fs::File::create(self.data.path().join("etcd.log")).expect("log file");
        let child = Command::new(bin)
            .arg("--name=test")
            .arg(format!(
                "--data-dir={}",
                self.data.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={}", self.endpoint()))
            .arg(format!("--advertise-client-urls={}", self.endpoint()))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting etcd");
        *self.child() = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.healthy() {
            assert!(
                Instant::now() < deadline,
                "etcd did not become healthy; its log:\n{}",
                std::fs::read_to_string(self.data.path().join("etcd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether `GET /health` answers `"health":"true"`.
    fn healthy(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.client_port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let request = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && answer.contains("\"health\":\"true\"")
    }

    /// Every key under `prefix` with its value, through `etcdctl`.
    ///
    /// # Panics
    /// When `etcdctl` is missing or fails.
    pub fn get_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &self.endpoint(), "get", "--prefix", prefix])
            .output()
            .unwrap_or_else(|e| panic!("etcdctl: {e}; {INSTALL_HINT}"));
        assert!(out.status.success(), "etcdctl get: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        lines
            .chunks(2)
            .map(|kv| {
                (
                    kv[0].to_owned(),
                    kv.get(1).copied().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }

    /// Writes `key = value` through `etcdctl`.
    ///
    /// # Panics
    /// When `etcdctl` is missing or fails.
    pub fn put(&self, key: &str, value: &str) {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &self.endpoint(), "put", key, value])
            .output()
            .unwrap_or_else(|e| panic!("etcdctl: {e}; {INSTALL_HINT}"));
        assert!(out.status.success(), "etcdctl put: {out:?}");
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
