//! A plugin that hands a descriptor to `cni_skel::close_after_exit`, as
//! cni-netfilter hands its socket after rule deletions, answers and exits
//! as any plugin does; what else it held (a lock) is let go as it exits;
//! the handed file is closed shortly after, by a detached child that then
//! exits; with a probe, once the answer to it has stopped changing, or at
//! the deadline when it never does. The test process makes itself the
//! subreaper of the plugin's orphans, to see that child; the tests take
//! turns, as each reaps whatever orphan comes.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tests::{run_plugin, StdoutJson, FAKE_NETNS};

/// A user no process of the machine runs as, so that a process limit of
/// one is the plugin alone.
const NO_FORK_UID: u32 = 54_321;

/// One test at a time: orphans are reaped by whichever test waits.
static TURN: Mutex<()> = Mutex::new(());

/// Reaps the next orphan the test process inherits, within `deadline`:
/// its pid, or `None` when there is none left to reap (`ECHILD`) or it
/// did not exit in time.
fn reap_orphan(deadline: Duration) -> Option<libc::pid_t> {
    let until = Instant::now() + deadline;
    loop {
        let mut status = 0;
        // SAFETY: waitpid into a local status.
        #[allow(unsafe_code)]
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            return Some(pid);
        }
        if pid < 0 || Instant::now() > until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A plugin run with its lock, its FIFO (read end open here) and,
/// optionally, the test's end of a probe socket.
struct Run {
    _turn: std::sync::MutexGuard<'static, ()>,
    dir: tempfile::TempDir,
    lock: PathBuf,
    reader: File,
    probe: Option<UnixDatagram>,
}

impl Run {
    /// Runs ADD of `late-close`, which hands its FIFO (and, with
    /// `probe`, a datagram socket whose probes this test answers) over;
    /// checks that the runtime read the answer to its end and saw the
    /// exit status. Holds this test's turn.
    fn add(probe: bool) -> Run {
        Run::add_as(probe, false)
    }

    /// [`Run::add`]; with `unable_to_fork`, the plugin runs as a user of
    /// its own (uid [`NO_FORK_UID`]) whose process limit is the plugin
    /// itself (`RLIMIT_NPROC` 1), so its fork fails with `EAGAIN`.
    fn add_as(probe: bool, unable_to_fork: bool) -> Run {
        let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        // Orphans of the plugin become this process's children.
        // SAFETY: prctl with integer arguments.
        #[allow(unsafe_code)]
        let subreaper = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        assert_eq!(subreaper, 0, "PR_SET_CHILD_SUBREAPER");
        let dir = tempfile::tempdir().unwrap();
        let (lock, fifo) = (dir.path().join("lock"), dir.path().join("fifo"));
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        // The reader first, so that the plugin's open for writing does not
        // block.
        let reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let mut conf = serde_json::json!({
            "cniVersion": "1.1.0", "name": "net", "type": "late-close",
            "lock": lock, "fifo": fifo,
        });
        let probe = probe.then(|| {
            let (ours, theirs) = (dir.path().join("test.sock"), dir.path().join("plugin.sock"));
            conf["probe"] = serde_json::json!({ "bind": theirs, "peer": ours });
            let socket = UnixDatagram::bind(&ours).unwrap();
            socket.connect(&theirs).unwrap_or(());
            socket
        });
        let env = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_NETNS", FAKE_NETNS),
        ];
        let plugin = Path::new(env!("CARGO_BIN_EXE_late-close"));
        let stdin = conf.to_string();
        let out = if unable_to_fork {
            use std::os::unix::fs::PermissionsExt;
            use std::os::unix::process::CommandExt;
            for (path, mode) in [(dir.path(), 0o777), (fifo.as_path(), 0o666)] {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
            }
            let mut cmd = std::process::Command::new(plugin);
            cmd.env_clear().envs(env).uid(NO_FORK_UID);
            // SAFETY: setrlimit is async-signal-safe; the limit holds
            // for this user's processes, here the plugin alone.
            #[allow(unsafe_code)]
            unsafe {
                cmd.pre_exec(|| {
                    let one = libc::rlimit {
                        rlim_cur: 1,
                        rlim_max: 1,
                    };
                    match libc::setrlimit(libc::RLIMIT_NPROC, &one) {
                        0 => Ok(()),
                        _ => Err(std::io::Error::last_os_error()),
                    }
                });
            }
            tests::output_of(&mut cmd, stdin.as_bytes())
        } else {
            run_plugin(plugin, &env, stdin.as_bytes())
        };
        assert!(out.success(), "{out:?}");
        assert_eq!(out.stdout_json(), serde_json::json!({ "handed": true }));
        Run {
            _turn: turn,
            dir,
            lock,
            reader,
            probe,
        }
    }

    /// Whether every writer of the FIFO has closed it, waiting up to
    /// `deadline`.
    fn fifo_closed_within(&self, deadline: Duration) -> bool {
        let until = Instant::now() + deadline;
        loop {
            let mut fds = [libc::pollfd {
                fd: self.reader.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: poll on a descriptor this test owns, into a local
            // array.
            #[allow(unsafe_code)]
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, 20) };
            if ready > 0 && fds[0].revents & libc::POLLHUP != 0 {
                return true;
            }
            if Instant::now() > until {
                return false;
            }
        }
    }

    /// The close was handed to a child of the plugin, which exits once it
    /// has closed the handed file (within 10 s): none is left to reap
    /// after it, and the FIFO has no writer left.
    fn child_exits_having_closed(&self) {
        let child = reap_orphan(Duration::from_secs(10));
        assert!(child.is_some(), "no detached child exited after the plugin");
        assert_eq!(reap_orphan(Duration::ZERO), None, "a second orphan");
        assert!(self.fifo_closed_within(Duration::ZERO), "the FIFO is open");
    }

    /// Answers the plugin's probes with `answers`, one per probe, each
    /// checked to be the probe the plugin gave; how many probes came.
    fn answer_probes(&self, answers: &[&[u8]]) -> usize {
        let socket = self.probe.as_ref().unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let theirs = self.dir.path().join("plugin.sock");
        let mut probes = 0;
        for answer in answers {
            let mut buf = [0u8; 64];
            let Ok(len) = socket.recv(&mut buf) else {
                break;
            };
            assert_eq!(&buf[..len], b"what now?");
            probes += 1;
            if socket.send_to(answer, &theirs).is_err() {
                break;
            }
        }
        probes
    }
}

#[test]
fn a_plugin_that_hands_a_close_over_answers_lets_its_lock_go_and_the_file_closes_soon_after() {
    let run = Run::add(false);

    // The lock the plugin held until its exit is free now: the child
    // closed its copy before the plugin exited.
    let again = File::open(&run.lock).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    #[allow(unsafe_code)]
    let taken = unsafe { libc::flock(again.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(taken, 0, "the lock is still held after the plugin exited");

    run.child_exits_having_closed();
}

#[test]
fn with_a_probe_the_close_waits_until_two_answers_in_a_row_are_the_same() {
    let run = Run::add(true);

    // Three changes, then the same answer twice: four probes, then the
    // close, and no fifth probe.
    let probes = run.answer_probes(&[b"gen 1", b"gen 2", b"gen 3", b"gen 3", b"gen 3"]);
    assert_eq!(probes, 4, "probes before the close");
    run.child_exits_having_closed();
}

#[test]
fn with_a_probe_whose_answer_never_settles_the_close_comes_at_the_deadline() {
    let run = Run::add(true);
    let changing: Vec<Vec<u8>> = (0..1000).map(|i| format!("gen {i}").into_bytes()).collect();
    let changing: Vec<&[u8]> = changing.iter().map(Vec::as_slice).collect();
    // Every answer differs: the child stops asking at its deadline, 2 s
    // after the plugin's exit, having slept 50 ms after each answer: at
    // most 41 probes.
    let probes = run.answer_probes(&changing);
    assert!((2..=41).contains(&probes), "{probes} probes");
    run.child_exits_having_closed();
}

#[test]
fn with_a_probe_that_is_never_answered_the_close_comes_after_the_first() {
    let run = Run::add(true);
    let socket = run.probe.as_ref().unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 64];
    let len = socket.recv(&mut buf).expect("the first probe");
    assert_eq!(&buf[..len], b"what now?");
    // Unanswered: the child stops asking (it waits 1 s for an answer)
    // and closes; no second probe comes.
    run.child_exits_having_closed();
    socket.set_nonblocking(true).unwrap();
    assert!(socket.recv(&mut buf).is_err(), "a second probe came");
}

/// Where the plugin cannot fork (a process limit, a full pid space), it
/// answers as usual and closes the handed file itself as it exits: the
/// runtime's answer never depends on the hand-over, and no descriptor
/// outlives the plugin.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_plugin_that_cannot_fork_answers_and_closes_the_handed_file_as_it_exits() {
    let run = Run::add_as(false, true);
    assert!(
        run.fifo_closed_within(Duration::ZERO),
        "the FIFO is still open after the plugin exited"
    );
    assert_eq!(reap_orphan(Duration::from_millis(300)), None, "an orphan");
}
