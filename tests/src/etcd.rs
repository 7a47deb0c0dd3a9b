//! A real etcd for the etcd store's tests: Debian's `etcd` on 127.0.0.1,
//! on free ports, with a temporary data directory, stopped when dropped.
//! Read back through `etcdctl`. [`Cluster`] is three members of their
//! own, for the faults one member cannot show. Both come from `scripts/install-test-deps.sh`
//! (etcd-server, etcd-client); the tests fail when they are missing.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::free_port;
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
    /// Starts etcd and waits until it answers. An etcd that exits at start
    /// (a port taken after all) costs one more try on new ports, twice at
    /// most.
    ///
    /// # Panics
    /// When `etcd` is not installed, or does not answer within 20 s on
    /// three tries; the message has the end of its log.
    pub fn start() -> Etcd {
        started("etcd", "cni-etcd-test-", |data| {
            let etcd = Etcd {
                data,
                client_port: free_port(),
                peer_port: free_port(),
                child: Mutex::new(None),
            };
            etcd.try_restart().map(|()| etcd)
        })
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
    /// When `etcd` is not installed, or does not answer within 20 s.
    pub fn restart(&self) {
        if let Err(why) = self.try_restart() {
            panic!("{why}");
        }
    }

    /// [`Etcd::restart`]: an error with the end of etcd's log when it
    /// exits or does not answer within 20 s.
    fn try_restart(&self) -> Result<(), String> {
        self.stop();
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let bin = PathBuf::from("/usr/bin/etcd");
        assert!(
            bin.is_file(),
            "etcd is missing ({} not found); {INSTALL_HINT}",
            bin.display()
        );
        let log_path = self.data.path().join("etcd.log");
        let log = std::fs::File::create(&log_path).expect("log file");
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
        let exited = || {
            let mut child = self.child();
            child
                .as_mut()
                .is_some_and(has_exited)
                .then(|| "it".to_owned())
        };
        healthy_within_20s(|| self.healthy(), exited).map_err(|why| {
            format!(
                "etcd on ports {}/{} did not become healthy ({why}); the end of its log:\n{}",
                self.client_port,
                self.peer_port,
                log_tail(&log_path)
            )
        })
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
        etcdctl_get_prefix(&self.endpoint(), prefix)
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

impl Etcd {
    /// Deletes every key under `prefix` through `etcdctl` (a network
    /// wiped by its operator).
    ///
    /// # Panics
    /// When `etcdctl` is missing or fails.
    pub fn delete_prefix(&self, prefix: &str) {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &self.endpoint(), "del", "--prefix", prefix])
            .output()
            .unwrap_or_else(|e| panic!("etcdctl: {e}; {INSTALL_HINT}"));
        assert!(out.status.success(), "etcdctl del: {out:?}");
    }

    /// The keys under `prefix`, through `etcdctl` (no values: a network's
    /// hundred thousand reservations print quickly).
    ///
    /// # Panics
    /// When `etcdctl` is missing or fails.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args([
                "--endpoints",
                &self.endpoint(),
                "get",
                "--prefix",
                "--keys-only",
                prefix,
            ])
            .output()
            .unwrap_or_else(|e| panic!("etcdctl: {e}; {INSTALL_HINT}"));
        assert!(out.status.success(), "etcdctl get: {out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Writes every `key = value` in transactions of [`PUTS_PER_TXN`]
    /// puts through etcd's JSON gateway: a bulk fill, thousands of keys a
    /// second where `etcdctl put` writes a few dozen.
    ///
    /// # Panics
    /// When etcd does not answer or refuses one.
    pub fn put_all(&self, pairs: &[(String, String)]) {
        for body in bulk_puts(pairs) {
            let answer = self.post("/v3/kv/txn", &body);
            assert!(answer.contains("\"header\""), "bulk put refused: {answer}");
        }
    }

    /// POSTs `body` to `path` (HTTP/1.0: the answer ends with the
    /// connection); the answer's body.
    fn post(&self, path: &str, body: &str) -> String {
        let mut stream =
            TcpStream::connect(("127.0.0.1", self.client_port)).expect("connecting to etcd");
        let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
        let request = format!(
            "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .expect("writing to etcd");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("etcd's answer");
        answer
            .split_once("\r\n\r\n")
            .map_or(answer.clone(), |(_, b)| b.to_owned())
    }
}

/// Puts in one bulk transaction (etcd's `--max-txn-ops` is 128).
pub const PUTS_PER_TXN: usize = 120;

/// The bodies of the transactions that write every `key = value` of
/// `pairs`, [`PUTS_PER_TXN`] each.
fn bulk_puts(pairs: &[(String, String)]) -> impl Iterator<Item = String> + '_ {
    pairs.chunks(PUTS_PER_TXN).map(|chunk| {
        let success: Vec<serde_json::Value> = chunk
            .iter()
            .map(|(k, v)| {
                serde_json::json!({"request_put": {"key": base64(k.as_bytes()),
                                                   "value": base64(v.as_bytes())}})
            })
            .collect();
        serde_json::json!({ "success": success }).to_string()
    })
}

/// Standard base64, as etcd's gateway carries keys and values.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
        forget_hints(&[self.endpoint()]);
    }
}

/// Removes the hints (`cni_ipam::store::etcd::HINT_DIR`) that stores of
/// a test's etcd (or fake) at `endpoints` wrote: the node no longer has
/// blocks there.
pub fn forget_hints(endpoints: &[String]) {
    let Ok(entries) = std::fs::read_dir(cni_ipam::store::etcd::HINT_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let first = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let first = first.lines().next().unwrap_or_default();
        if first
            .split(',')
            .any(|e| endpoints.iter().any(|mine| mine == e))
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Up to three tries of `attempt`, each given a temporary directory of
/// its own named `prefix`: an etcd that exits at start (a port taken
/// after all) is tried again on new ports. Panics with every try's
/// failure, saying `what` did not start.
fn started<T>(
    what: &str,
    prefix: &str,
    mut attempt: impl FnMut(tempfile::TempDir) -> Result<T, String>,
) -> T {
    let mut failures = Vec::new();
    for _ in 0..3 {
        let data = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("temporary directory");
        match attempt(data) {
            Ok(started) => return started,
            Err(why) => failures.push(why),
        }
    }
    panic!("{what} did not start:\n{}", failures.join("\n"));
}

/// Polls every 50 ms until `healthy`; an error saying why once `exited`
/// names what exited, or after 20 s.
fn healthy_within_20s(
    healthy: impl Fn() -> bool,
    exited: impl Fn() -> Option<String>,
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if healthy() {
            return Ok(());
        }
        if let Some(who) = exited() {
            return Err(format!("{who} exited"));
        }
        if Instant::now() >= deadline {
            return Err("20 s passed".to_owned());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether `child` has exited (reaping it).
fn has_exited(child: &mut Child) -> bool {
    child.try_wait().ok().flatten().is_some()
}

/// The last lines of the log at `path`, for a failure's message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join("\n")
}

/// A private three-member etcd cluster on 127.0.0.1, each member on ports
/// and a data directory of its own, stopped when dropped: for faults a
/// single member cannot show (a leader killed, a member hung).
pub struct Cluster {
    data: tempfile::TempDir,
    /// (client port, peer port) of each member.
    ports: Vec<(u16, u16)>,
    token: String,
    children: Mutex<Vec<Option<Child>>>,
}

/// Members of a [`Cluster`].
pub const MEMBERS: usize = 3;

impl Cluster {
    /// Starts three members and waits until the cluster has a leader.
    /// A member that exits at start (a port taken after all) costs one
    /// more try on new ports, twice at most.
    ///
    /// # Panics
    /// When `etcd` is not installed, or the cluster is not healthy within
    /// 20 s on three tries; the message has each member's last log lines.
    pub fn start() -> Cluster {
        static STARTED: AtomicU32 = AtomicU32::new(0);
        started("the etcd cluster", "cni-etcd-cluster-", |data| {
            let n = STARTED.fetch_add(1, Ordering::Relaxed);
            let cluster = Cluster {
                token: format!("cni-test-{}-{n}", std::process::id()),
                ports: (0..MEMBERS).map(|_| (free_port(), free_port())).collect(),
                data,
                children: Mutex::new((0..MEMBERS).map(|_| None).collect()),
            };
            for i in 0..MEMBERS {
                cluster.spawn(i);
            }
            cluster.until_healthy().map(|()| cluster)
        })
    }

    /// `http://127.0.0.1:<port>` of each member, as the store's
    /// `endpoints` take them.
    pub fn endpoints(&self) -> Vec<String> {
        (0..MEMBERS).map(|i| self.endpoint(i)).collect()
    }

    /// Member `i`'s client URL.
    pub fn endpoint(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.ports[i].0)
    }

    fn children(&self) -> std::sync::MutexGuard<'_, Vec<Option<Child>>> {
        self.children.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn spawn(&self, i: usize) {
        let bin = PathBuf::from("/usr/bin/etcd");
        assert!(
            bin.is_file(),
            "etcd is missing ({} not found); {INSTALL_HINT}",
            bin.display()
        );
        let peer = |i: usize| format!("http://127.0.0.1:{}", self.ports[i].1);
        let initial: Vec<String> = (0..MEMBERS).map(|m| format!("m{m}={}", peer(m))).collect();
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.data.path().join(format!("m{i}.log")))
            .expect("log file");
        let child = Command::new(bin)
            .arg(format!("--name=m{i}"))
            .arg(format!(
                "--data-dir={}",
                self.data.path().join(format!("m{i}")).display()
            ))
            .arg(format!("--listen-client-urls={}", self.endpoint(i)))
            .arg(format!("--advertise-client-urls={}", self.endpoint(i)))
            .arg(format!("--listen-peer-urls={}", peer(i)))
            .arg(format!("--initial-advertise-peer-urls={}", peer(i)))
            .arg(format!("--initial-cluster={}", initial.join(",")))
            .arg(format!("--initial-cluster-token={}", self.token))
            .arg("--initial-cluster-state=new")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting etcd");
        self.children()[i] = Some(child);
    }

    /// Waits until every running member answers `/health` true.
    ///
    /// # Panics
    /// As [`Cluster::until_healthy`] fails.
    fn wait_healthy(&self) {
        if let Err(why) = self.until_healthy() {
            panic!("{why}");
        }
    }

    /// Waits until every running member answers `/health` true: an error
    /// with the members' last log lines when one exits or 20 s pass.
    fn until_healthy(&self) -> Result<(), String> {
        let running = || (0..MEMBERS).filter(|i| self.children()[*i].is_some());
        let exited = || {
            let mut children = self.children();
            (0..MEMBERS)
                .find(|i| children[*i].as_mut().is_some_and(has_exited))
                .map(|i| format!("m{i}"))
        };
        healthy_within_20s(|| running().all(|i| self.healthy(i)), exited).map_err(|why| {
            let logs: Vec<String> = (0..MEMBERS)
                .map(|i| {
                    let log = self.data.path().join(format!("m{i}.log"));
                    format!("m{i} (ports {:?}):\n{}", self.ports[i], log_tail(&log))
                })
                .collect();
            format!(
                "the etcd cluster did not become healthy ({why}); logs in {}:\n{}",
                self.data.path().display(),
                logs.join("\n")
            )
        })
    }

    fn healthy(&self, i: usize) -> bool {
        post(
            self.ports[i].0,
            "GET",
            "/health",
            "",
            Duration::from_secs(1),
        )
        .is_some_and(|a| a.contains("\"health\":\"true\""))
    }

    /// The index of the member that leads now, as the members say.
    pub fn leader(&self) -> Option<usize> {
        let ids: Vec<Option<(String, String)>> = (0..MEMBERS)
            .map(|i| {
                let answer = post(
                    self.ports[i].0,
                    "POST",
                    "/v3/maintenance/status",
                    "{}",
                    Duration::from_secs(1),
                )?;
                let v: serde_json::Value = serde_json::from_str(&answer).ok()?;
                let id = v["header"]["member_id"].as_str()?.to_owned();
                let leader = v["leader"].as_str()?.to_owned();
                Some((id, leader))
            })
            .collect();
        let leader = ids.iter().flatten().map(|(_, l)| l.clone()).next()?;
        ids.iter()
            .position(|m| m.as_ref().is_some_and(|(id, _)| *id == leader))
    }

    /// The pid of member `i`, while it runs.
    pub fn pid(&self, i: usize) -> Option<i32> {
        self.children()[i]
            .as_ref()
            .and_then(|c| i32::try_from(c.id()).ok())
    }

    /// Stops member `i` (SIGSTOP), as a hung process or a paused VM:
    /// its connections stay open and nothing answers on them.
    pub fn pause(&self, i: usize) {
        self.signal(i, libc::SIGSTOP);
    }

    /// Lets a paused member `i` run again (SIGCONT).
    pub fn resume(&self, i: usize) {
        self.signal(i, libc::SIGCONT);
    }

    fn signal(&self, i: usize, signal: libc::c_int) {
        if let Some(pid) = self.pid(i) {
            // SAFETY: kill(2) takes no pointers; `pid` is a child of this
            // cluster that only `kill` reaps, so it names no other process.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(pid, signal)
            };
        }
    }

    /// Kills member `i` (SIGKILL), as a crash would.
    pub fn kill(&self, i: usize) {
        if let Some(mut child) = self.children()[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `i` again on its ports and data, and waits until the
    /// cluster is healthy.
    pub fn restart(&self, i: usize) {
        self.kill(i);
        self.spawn(i);
        self.wait_healthy();
    }

    /// Every key under `prefix` with its value, read from the cluster
    /// through `etcdctl` (linearizable).
    ///
    /// # Panics
    /// When `etcdctl` is missing or fails.
    pub fn get_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        etcdctl_get_prefix(&self.endpoints().join(","), prefix)
    }

    /// Writes every `key = value` through member 0's JSON gateway, as
    /// [`Etcd::put_all`] does.
    ///
    /// # Panics
    /// When member 0 does not answer or refuses one.
    pub fn put_all(&self, pairs: &[(String, String)]) {
        for body in bulk_puts(pairs) {
            let answer = post(
                self.ports[0].0,
                "POST",
                "/v3/kv/txn",
                &body,
                Duration::from_secs(20),
            );
            let answer = answer.expect("member 0 answers");
            assert!(answer.contains("\"header\""), "bulk put refused: {answer}");
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..MEMBERS {
            // A stopped member would not die of SIGKILL until resumed
            // on some kernels' accounting; resume it first.
            self.resume(i);
            self.kill(i);
        }
        forget_hints(&self.endpoints());
    }
}

/// `method path` with `body` to 127.0.0.1:`port` over HTTP/1.0; the
/// answer's body, `None` when it does not answer within `timeout`.
fn post(port: u16, method: &str, path: &str, body: &str, timeout: Duration) -> Option<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())
}

/// Every key under `prefix` with its value, read through `etcdctl` from
/// `endpoints` (comma-separated; a linearizable read).
fn etcdctl_get_prefix(endpoints: &str, prefix: &str) -> Vec<(String, String)> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoints, "get", "--prefix", prefix])
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

#[cfg(test)]
mod tests {
    #[test]
    fn base64_pads_as_the_standard_says() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(b"/cni-ipam/n"), "L2NuaS1pcGFtL24=");
    }

    #[test]
    fn an_etcd_that_exits_at_start_is_tried_again_and_three_failures_are_all_told() {
        let mut tries = 0;
        let got = super::started("etcd", "cni-etcd-unit-", |_| {
            tries += 1;
            match tries {
                3 => Ok(tries),
                n => Err(format!("try {n}")),
            }
        });
        assert_eq!(got, 3);
        let failed = std::panic::catch_unwind(|| {
            super::started("etcd", "cni-etcd-unit-", |_| {
                Err::<(), _>("port taken".to_owned())
            })
        })
        .unwrap_err();
        let message = failed.downcast_ref::<String>().unwrap();
        assert_eq!(
            message,
            "etcd did not start:\nport taken\nport taken\nport taken"
        );
    }

    #[test]
    fn a_member_that_exited_is_told_at_once_not_after_the_20_s() {
        let started = std::time::Instant::now();
        let why = super::healthy_within_20s(|| false, || Some("m1".to_owned())).unwrap_err();
        assert_eq!(why, "m1 exited");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(super::healthy_within_20s(|| true, || None), Ok(()));
    }
}
