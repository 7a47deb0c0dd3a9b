//! A plugin that hands a descriptor to `cni_skel::close_after_exit`, as
//! cni-netfilter hands its socket after rule deletions, answers and exits
//! as any plugin does; what else it held (a lock) is let go as it exits;
//! the handed file is closed shortly after, by a detached child that then
//! exits. One test in this binary: it makes the test process the
//! subreaper of the plugin's orphans, to see that child.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use tests::{run_plugin, StdoutJson, FAKE_NETNS};

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

#[test]
fn a_plugin_that_hands_a_close_over_answers_lets_its_lock_go_and_the_file_closes_soon_after() {
    // Orphans of the plugin become this process's children.
    // SAFETY: prctl with integer arguments.
    #[allow(unsafe_code)]
    let subreaper = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(subreaper, 0, "PR_SET_CHILD_SUBREAPER");
    let dir = tempfile::tempdir().unwrap();
    let (lock, fifo) = (dir.path().join("lock"), dir.path().join("fifo"));
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success(), "mkfifo");
    // The reader first, so that the plugin's open for writing does not block.
    let reader = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let conf = serde_json::json!({
        "cniVersion": "1.1.0", "name": "net", "type": "late-close",
        "lock": lock, "fifo": fifo,
    });
    let out = run_plugin(
        Path::new(env!("CARGO_BIN_EXE_late-close")),
        &[
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_NETNS", FAKE_NETNS),
        ],
        conf.to_string().as_bytes(),
    );
    // The runtime read the answer to its end and saw the exit status.
    assert!(out.success(), "{out:?}");
    assert_eq!(out.stdout_json(), serde_json::json!({ "handed": true }));

    // The lock the plugin held until its exit is free now: the child
    // closed its copy before the plugin exited.
    let again = File::open(&lock).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    #[allow(unsafe_code)]
    let taken = unsafe { libc::flock(again.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    assert_eq!(taken, 0, "the lock is still held after the plugin exited");

    // The close was handed to a child of the plugin, which exits once it
    // has closed the handed file: none is left to reap after it.
    let child = reap_orphan(Duration::from_secs(10));
    assert!(child.is_some(), "no detached child exited after the plugin");
    assert_eq!(reap_orphan(Duration::ZERO), None, "a second orphan");

    // The handed write end is closed: the FIFO hangs up (every writer
    // gone).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut fds = [libc::pollfd {
            fd: reader.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: poll on a descriptor this test owns, into a local array.
        #[allow(unsafe_code)]
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, 100) };
        if ready > 0 && fds[0].revents & libc::POLLHUP != 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the handed file was still open 10 s after the plugin exited"
        );
    }
}
