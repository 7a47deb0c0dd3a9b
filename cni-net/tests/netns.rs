//! Namespaces: opening by path, identity, and running inside one without
//! moving the caller. As root, in namespaces the tests create
//! (`cni_net::testing::TempNetns`, removed on drop).

use std::path::Path;

use cni_net::testing::TempNetns;
use cni_net::{NetError, Netns};
use cni_types::Code;

fn temp(tag: &str) -> TempNetns {
    TempNetns::new(tag).unwrap_or_else(|e| panic!("these tests need root: {e}"))
}

#[test]
fn an_absent_path_is_named_and_is_code_8() {
    let err = Netns::open("/run/netns/cni-net-no-such-namespace").unwrap_err();
    assert!(matches!(err, NetError::NoSuchNetns { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "network namespace /run/netns/cni-net-no-such-namespace does not exist"
    );
    assert_eq!(cni_types::Error::from(err).code, Code::INVALID_NETNS);
}

#[test]
fn a_file_that_is_not_a_namespace_is_named() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let err = Netns::open(file.path()).unwrap_err();
    assert!(matches!(err, NetError::NotANetns { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("{} is not a network namespace", file.path().display())
    );
}

#[test]
fn another_kind_of_namespace_is_refused_when_opened() {
    // Refused before a plugin could change anything with it: a veth made
    // into it, or a bridge made before the first use of the namespace.
    for kind in ["mnt", "uts", "ipc"] {
        let path = format!("/proc/self/ns/{kind}");
        let err = Netns::open(&path).unwrap_err();
        assert!(matches!(err, NetError::NotANetns { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!("{path} is not a network namespace")
        );
    }
    assert!(Netns::open("/proc/self/ns/net").is_ok());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn the_same_namespace_by_two_paths_is_the_same() {
    let tmp = temp("ident");
    let again = Netns::open(tmp.path()).unwrap();
    assert!(tmp.is_same(&again).unwrap());
    let host = Netns::current().unwrap();
    assert!(!tmp.is_same(&host).unwrap());
    let inside = tmp.run(|_| Netns::current()?.id()).unwrap();
    assert_eq!(
        inside,
        tmp.id().unwrap(),
        "run executes inside the namespace"
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn running_in_a_namespace_never_moves_the_calling_threads() {
    let tmp = temp("threads");
    let target = tmp.id().unwrap();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                scope.spawn(|| {
                    let before = Netns::current().unwrap().id().unwrap();
                    for _ in 0..4 {
                        let inside = tmp.run(|_| Netns::current()?.id()).unwrap();
                        assert_eq!(inside, target);
                        let _socket = tmp.socket().unwrap();
                    }
                    let after = Netns::current().unwrap().id().unwrap();
                    assert_eq!(before, after, "the caller's thread stayed where it was");
                    assert_ne!(after, target);
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    });
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_socket_opened_in_a_namespace_works_there_from_the_calling_thread() {
    let tmp = temp("socket");
    let mut netlink = tmp.socket().unwrap();
    let names: Vec<String> = netlink
        .links()
        .unwrap()
        .into_iter()
        .map(|l| l.name)
        .collect();
    assert_eq!(names, ["lo"], "a new namespace holds only lo");
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn errors_returned_inside_come_back_and_panics_continue_in_the_caller() {
    let tmp = temp("errors");
    let err = tmp.run(|nl| nl.link("nosuchlink0").map(drop)).unwrap_err();
    assert_eq!(err.to_string(), "link \"nosuchlink0\" not found");
    let panicked = std::panic::catch_unwind(|| {
        let _ = tmp.run(|_| -> Result<(), NetError> { panic!("inside") });
    });
    assert!(panicked.is_err());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_temporary_namespace_is_removed_on_drop_even_on_panic() {
    let tmp = temp("drop");
    let path = tmp.path().to_path_buf();
    assert!(path.starts_with("/run/netns"));
    drop(tmp);
    assert!(!path.exists(), "{} removed", path.display());

    let seen = std::sync::Mutex::new(None);
    let result = std::panic::catch_unwind(|| {
        let tmp = temp("panic");
        *seen.lock().unwrap() = Some(tmp.path().to_path_buf());
        panic!("test body fails");
    });
    assert!(result.is_err());
    let path = seen.into_inner().unwrap().unwrap();
    assert!(!Path::new(&path).exists(), "{} removed", path.display());
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn work_in_the_callers_own_namespace_runs_on_its_thread_and_other_work_does_not_move_it() {
    let tmp = temp("own-thread");
    let caller = std::thread::current().id();
    let here = Netns::current().unwrap();
    let (thread, inside) = here
        .run(|nl| {
            let inside = Netns::current()?.is_same(&here)?;
            nl.link("lo")?;
            Ok::<_, NetError>((std::thread::current().id(), inside))
        })
        .unwrap();
    assert_eq!(thread, caller, "no thread of its own");
    assert!(inside);
    // Another namespace: a thread of its own, and the caller stays.
    let other = tmp
        .run(|_| Ok::<_, NetError>((std::thread::current().id(), Netns::current()?.id()?)))
        .unwrap();
    assert_ne!(other.0, caller);
    assert_ne!(other.1, here.id().unwrap());
    assert!(
        Netns::current().unwrap().is_same(&here).unwrap(),
        "the caller did not move"
    );
}
