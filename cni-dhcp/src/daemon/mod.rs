//! The lease daemon (`dhcp daemon`): holds one lease per attachment,
//! renews it at T1, rebinds at T2, releases it on DEL, and answers the
//! plugin over its Unix socket ([`crate::rpc`]).
//!
//! One thread per lease keeps its timers; one thread per connection
//! answers the plugin.
//!
//! Go: `DHCP`, `runDaemon` (plugins `plugins/ipam/dhcp/daemon.go`) and
//! `DHCPLease.maintain` (`lease.go`).

mod keep;
mod options;
mod pending;

use std::collections::HashMap;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, PoisonError};

use cni_net::Netns;
use cni_types::{Code, Error};

use crate::client::Client;
use crate::config::NetConfig;
use crate::lease::Lease;
use crate::rpc::{self, Answer, CmdArgs, EMPTY, RESULT};
use crate::DhcpError;
use keep::{current, keep, stop_keeping, Held};
pub use options::DaemonOptions;
use pending::{watch_caller, Pending, PendingSet};

/// What the daemon answers when no server gave a lease in time.
///
/// Go: `errNoMoreTries`.
pub const NO_MORE_TRIES: &str = "no more tries";

/// How many plugins' connections are served at once; more wait in the
/// socket's backlog. Each has [`rpc::READ_DEADLINE`] to send its call.
pub const MAX_CONNECTIONS: usize = 16;

/// The daemon: its options, the leases it holds by client id, the
/// acquisitions under way, the connections being served.
pub struct Daemon {
    options: DaemonOptions,
    leases: Mutex<HashMap<String, Held>>,
    pending: Mutex<PendingSet>,
    connections: (Mutex<usize>, Condvar),
}

/// The client id of an attachment: `CONTAINERID/NETNAME/IFNAME`, cut to
/// 254 bytes (option 61's length is one byte, with its type byte).
///
/// Go: `generateClientID`.
pub fn client_id(container_id: &str, network: &str, ifname: &str) -> String {
    let mut id = format!("{container_id}/{network}/{ifname}");
    if id.len() > 254 {
        let mut cut = 254;
        while !id.is_char_boundary(cut) {
            cut -= 1;
        }
        id.truncate(cut);
    }
    id
}

impl Daemon {
    /// A daemon holding no lease.
    pub fn new(options: DaemonOptions) -> Daemon {
        Daemon {
            options,
            leases: Mutex::new(HashMap::new()),
            pending: Mutex::new(PendingSet::default()),
            connections: (Mutex::new(0), Condvar::new()),
        }
    }

    /// Opens the socket: its directory is created (0700) when missing, a
    /// stale socket nobody answers on is replaced, one a live daemon
    /// answers on is [`DhcpError::AlreadyRunning`]; the socket is 0600.
    /// Writes the pid file when one is configured.
    pub fn listen(&self) -> Result<UnixListener, DhcpError> {
        let path = self.options.listen_path();
        let io = |op: &'static str, source| DhcpError::Io {
            op,
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| io("create the directory of", e))?;
        }
        if path.exists() {
            if UnixStream::connect(&path).is_ok() {
                return Err(DhcpError::AlreadyRunning(path));
            }
            std::fs::remove_file(&path).map_err(|e| io("remove the stale socket", e))?;
        }
        let listener = UnixListener::bind(&path).map_err(|e| io("listen on", e))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("restrict", e))?;
        if let Some(pidfile) = &self.options.pidfile {
            std::fs::write(pidfile, std::process::id().to_string()).map_err(|source| {
                DhcpError::Io {
                    op: "write the pid file",
                    path: pidfile.clone(),
                    source,
                }
            })?;
        }
        Ok(listener)
    }

    /// Answers connections on `listener` until it fails, each on a
    /// thread of its own, at most [`MAX_CONNECTIONS`] at once: the next
    /// is accepted when one ends.
    pub fn serve(self: &Arc<Self>, listener: UnixListener) -> std::io::Result<()> {
        loop {
            {
                let (count, freed) = &self.connections;
                let mut count = count.lock().unwrap_or_else(PoisonError::into_inner);
                while *count >= MAX_CONNECTIONS {
                    count = freed.wait(count).unwrap_or_else(PoisonError::into_inner);
                }
                *count += 1;
            }
            let stream = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) => {
                    self.connection_ended();
                    if e.kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    return Err(e);
                }
            };
            let daemon = Arc::clone(self);
            let spawned = std::thread::Builder::new().spawn(move || {
                let served = rpc::serve(stream, rpc::READ_DEADLINE, |method, args, connection| {
                    daemon.answer_call(method, &args, Some(connection))
                });
                if let Err(e) = served {
                    eprintln!("dhcp daemon: a plugin's connection failed: {e}");
                }
                daemon.connection_ended();
            });
            if let Err(e) = spawned {
                eprintln!("dhcp daemon: cannot serve a connection: {e}");
                self.connection_ended();
            }
        }
    }

    fn connection_ended(&self) {
        let (count, freed) = &self.connections;
        let mut count = count.lock().unwrap_or_else(PoisonError::into_inner);
        *count = count.saturating_sub(1);
        freed.notify_one();
    }

    /// Removes what [`Daemon::listen`] created (the socket, the pid file).
    pub fn remove_files(&self) {
        let _ = std::fs::remove_file(self.options.listen_path());
        if let Some(pidfile) = &self.options.pidfile {
            let _ = std::fs::remove_file(pidfile);
        }
    }

    /// Answers one call: `DHCP.Allocate` (ADD, and the reference's CHECK),
    /// `DHCP.Release` (DEL), `DHCP.Check`, `DHCP.GC`, `DHCP.Status`; an
    /// error is the string the plugin shows after `error calling METHOD: `.
    ///
    /// Go: the methods of `DHCP` (plugins `plugins/ipam/dhcp/daemon.go`).
    pub fn handle(&self, method: &str, args: &CmdArgs) -> Answer {
        self.answer_call(method, args, None)
    }

    /// [`Daemon::handle`], for a plugin on `caller`: an ADD whose plugin
    /// hangs up stops waiting for a server.
    fn answer_call(&self, method: &str, args: &CmdArgs, caller: Option<&UnixStream>) -> Answer {
        let empty = || (&EMPTY, crate::gob::Value::Struct(Vec::new()));
        let outcome = match method {
            "DHCP.Allocate" => self.add(args, caller).and_then(|result| {
                rpc::result_to_value(&result)
                    .map(|v| (&RESULT, v))
                    .map_err(|e| Error::internal(&e))
            }),
            "DHCP.Release" => self.del(args).map(|()| empty()),
            "DHCP.Check" => self.check(args).map(|()| empty()),
            "DHCP.GC" => self.gc(args).map(|()| empty()),
            "DHCP.Status" => Ok(empty()),
            other => return Err(format!("rpc: can't find method {other}")),
        };
        outcome.map_err(|e| match e.details.as_str() {
            "" => e.msg,
            details => format!("{}: {details}", e.msg),
        })
    }

    /// The leases held. Taken before [`Daemon::pending`] when both are.
    fn leases(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.leases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, PendingSet> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn config(args: &CmdArgs) -> Result<NetConfig, Error> {
        serde_json::from_slice(&args.stdin_data).map_err(|e| {
            Error::new(
                Code::DECODING_FAILURE,
                format!("error parsing netconf: {e}"),
            )
        })
    }

    /// A lease for the attachment: the one held (as last renewed or
    /// acquired anew), or a new one from the server; the result's routes
    /// get the configuration's `priority`.
    ///
    /// Go: `DHCP.Allocate`.
    fn add(&self, call: &CmdArgs, caller: Option<&UnixStream>) -> Result<serde_json::Value, Error> {
        let conf = Daemon::config(call)?;
        let ipam = conf.ipam.clone().unwrap_or_default();
        let options = ipam.client_options(&call.args)?;
        let id = client_id(&call.container_id, &conf.name, &call.ifname);
        let held = self.leases().get(&id).map(|h| Arc::clone(&h.lease));
        if let Some(lease) = held {
            return Daemon::answer(&current(&lease), ipam.priority);
        }
        let netns_path = format!("{}{}", self.options.host_prefix, call.netns);
        let netns = Netns::open(&netns_path).map_err(Error::from)?;
        let client = Client::open(
            &netns,
            &call.ifname,
            &id,
            options,
            self.options.timing,
            self.options.broadcast,
        )?;
        eprintln!("dhcp daemon: {id}: acquiring lease");
        let ticket = self.pending().insert(Pending {
            id: id.clone(),
            network: conf.name.clone(),
            container_id: call.container_id.clone(),
            ifname: call.ifname.clone(),
            stopper: client.stopper()?,
        });
        let done = Arc::new(AtomicBool::new(false));
        let watcher = match caller.map(UnixStream::try_clone) {
            Some(Ok(connection)) => Some(watch_caller(
                connection,
                client.stopper()?,
                Arc::clone(&done),
            )),
            _ => None,
        };
        let acquired = client.acquire();
        done.store(true, Ordering::SeqCst);
        if let Some(w) = watcher {
            let _ = w.join();
        }
        let cancelled = || {
            Error::try_again_later(
                format!("stopped acquiring a lease for {id}"),
                "the attachment was deleted, or its plugin went away, while the daemon waited for a server",
            )
        };
        let lease = match acquired {
            Ok(lease) => lease,
            Err(DhcpError::Stopped { .. }) => {
                self.pending().finish(ticket);
                return Err(cancelled());
            }
            // The reference's words for it ("error calling DHCP.Allocate:
            // no more tries" on the plugin's side); the details are logged.
            Err(e @ DhcpError::NoAnswer { .. }) => {
                self.pending().finish(ticket);
                eprintln!("dhcp daemon: {id}: {e}");
                return Err(Error::new(Code::TRY_AGAIN_LATER, NO_MORE_TRIES));
            }
            Err(e @ DhcpError::Refused { .. }) => {
                self.pending().finish(ticket);
                eprintln!("dhcp daemon: {id}: {e}");
                return Err(Error::new(
                    Code::TRY_AGAIN_LATER,
                    format!("{NO_MORE_TRIES}: {e}"),
                ));
            }
            Err(e) => {
                self.pending().finish(ticket);
                return Err(e.into());
            }
        };
        let value = Daemon::answer(&lease, ipam.priority);
        eprintln!("dhcp daemon: {id}: lease acquired: {}", lease.address);
        let stopper = client.stopper()?;
        let (stop, stopped) = mpsc::channel();
        let keeper_id = id.clone();
        let shared = Arc::new(Mutex::new(lease));
        let kept = Arc::clone(&shared);
        let keeper = std::thread::spawn(move || keep(&keeper_id, client, &kept, &stopped));
        let held = Held {
            network: conf.name,
            container_id: call.container_id.clone(),
            ifname: call.ifname.clone(),
            lease: shared,
            stop,
            stopper,
            keeper,
        };
        // Stopped by a DEL or GC after the lease was granted: nobody
        // waits for it any more, so it goes back at once.
        let mut leases = self.leases();
        if !self.pending().finish(ticket) {
            drop(leases);
            stop_keeping(held);
            return Err(cancelled());
        }
        // A lease that makes no result goes back too.
        let value = match value {
            Ok(value) => value,
            Err(e) => {
                drop(leases);
                stop_keeping(held);
                return Err(e);
            }
        };
        // A concurrent ADD of the same attachment got there first: keep
        // its lease, and give this one back.
        if let Some(first) = leases.get(&id) {
            let value = Daemon::answer(&current(&first.lease), ipam.priority);
            drop(leases);
            stop_keeping(held);
            return value;
        }
        leases.insert(id, held);
        Ok(value)
    }

    /// ADD's result for `lease`, its routes with `priority`.
    fn answer(lease: &Lease, priority: u32) -> Result<serde_json::Value, Error> {
        let result = lease.result(priority)?;
        serde_json::to_value(&result).map_err(|e| Error::internal(&e))
    }

    /// Stops keeping the attachment's lease and releases it; nothing held
    /// is success.
    ///
    /// Go: `DHCP.Release`.
    fn del(&self, call: &CmdArgs) -> Result<(), Error> {
        let conf = Daemon::config(call)?;
        let id = client_id(&call.container_id, &conf.name, &call.ifname);
        let held = {
            let mut leases = self.leases();
            self.pending().stop(|p| p.id == id);
            leases.remove(&id)
        };
        if let Some(held) = held {
            stop_keeping(held);
        }
        Ok(())
    }

    /// Releases the network's leases whose attachment is not in
    /// `cni.dev/valid-attachments`; without a list, releases nothing (see
    /// [`cni_types::ValidAttachments`]).
    fn gc(&self, call: &CmdArgs) -> Result<(), Error> {
        let conf = Daemon::config(call)?;
        let stale: Vec<Held> = {
            let mut leases = self.leases();
            let ids: Vec<String> = leases
                .iter()
                .filter(|(_, h)| {
                    h.network == conf.name
                        && !conf.valid_attachments.keeps(&h.container_id, &h.ifname)
                })
                .map(|(id, _)| id.clone())
                .collect();
            self.pending().stop(|p| {
                p.network == conf.name && !conf.valid_attachments.keeps(&p.container_id, &p.ifname)
            });
            ids.iter().filter_map(|id| leases.remove(id)).collect()
        };
        stale.into_iter().for_each(stop_keeping);
        Ok(())
    }

    /// Succeeds when the daemon holds a lease for the attachment.
    fn check(&self, call: &CmdArgs) -> Result<(), Error> {
        let conf = Daemon::config(call)?;
        let id = client_id(&call.container_id, &conf.name, &call.ifname);
        if self.leases().contains_key(&id) {
            Ok(())
        } else {
            Err(Error::new(
                Code::INTERNAL,
                format!("the DHCP daemon holds no lease for {id}"),
            ))
        }
    }
}

/// Runs the daemon until SIGTERM or SIGINT: listens, serves, and on the
/// signal removes its socket and pid file (leases are left to expire, as
/// in the reference).
///
/// Go: `runDaemon`.
pub fn run(options: DaemonOptions) -> Result<(), DhcpError> {
    use nix::sys::signal::{SigSet, Signal};
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGTERM);
    signals.add(Signal::SIGINT);
    // Blocked before any thread starts, so every thread inherits the mask
    // and only the sigwait below receives them.
    signals
        .thread_block()
        .map_err(|e| DhcpError::Signal(e.into()))?;
    let daemon = Arc::new(Daemon::new(options));
    let listener = daemon.listen()?;
    eprintln!(
        "dhcp daemon: listening on {}",
        daemon.options.listen_path().display()
    );
    let server = Arc::clone(&daemon);
    std::thread::spawn(move || {
        if let Err(e) = server.serve(listener) {
            eprintln!("dhcp daemon: stopped accepting: {e}");
        }
    });
    let signal = signals.wait().map_err(|e| DhcpError::Signal(e.into()));
    daemon.remove_files();
    signal.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_id_is_the_references_cut_to_254_bytes() {
        assert_eq!(client_id("c1", "net", "eth0"), "c1/net/eth0");
        assert_eq!(client_id(&"x".repeat(300), "n", "e").len(), 254);
    }
}

#[cfg(test)]
mod listen_tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use super::*;

    fn daemon(dir: &Path) -> Daemon {
        Daemon::new(DaemonOptions {
            socket_path: dir.join("sub/dhcp.sock"),
            pidfile: Some(dir.join("dhcp.pid")),
            ..DaemonOptions::default()
        })
    }

    #[test]
    fn the_socket_is_private_and_the_pid_file_holds_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let d = daemon(dir.path());
        let _listener = d.listen().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("sub/dhcp.sock")), 0o600);
        assert_eq!(mode(&dir.path().join("sub")), 0o700);
        let pid = std::fs::read_to_string(dir.path().join("dhcp.pid")).unwrap();
        assert_eq!(pid, std::process::id().to_string());
        d.remove_files();
        assert!(!dir.path().join("sub/dhcp.sock").exists());
        assert!(!dir.path().join("dhcp.pid").exists());
    }

    #[test]
    fn a_stale_socket_is_replaced_and_a_live_daemons_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = daemon(dir.path());
        let live = d.listen().unwrap();
        assert!(matches!(d.listen(), Err(DhcpError::AlreadyRunning(_))));
        drop(live); // the file stays, nobody answers
        assert!(dir.path().join("sub/dhcp.sock").exists());
        d.listen().expect("a stale socket is replaced");
    }
}
