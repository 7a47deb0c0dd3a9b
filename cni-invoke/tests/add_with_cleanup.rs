//! `add_with_cleanup`: the delegate's DEL runs when what follows its ADD
//! fails, and never when its ADD itself fails (what it holds then is an
//! earlier ADD's, and releasing it would take a live attachment's address).

mod common;

use std::path::{Path, PathBuf};

use cni_skel::{BoxError, CheckSupport, Outcome, Plugin, Reply, Request, TestRequest};
use cni_types::{Code, Error, NetConf, Result100};
use common::script;

/// A stand-in IPAM plugin that records each command in `commands` and, like
/// host-local, refuses an ADD while the attachment holds an address (the
/// file `held` exists).
fn refusing_ipam(dir: &Path) -> PathBuf {
    let (log, held) = (dir.join("commands"), dir.join("held"));
    let body = format!(
        "cat >/dev/null\necho $CNI_COMMAND >> {log}\n\
         case $CNI_COMMAND in\n\
         ADD) if [ -e {held} ]; then echo '{{\"code\":104,\"msg\":\"duplicate allocation is not allowed\"}}'; exit 1; fi\n\
              touch {held}; echo '{{\"cniVersion\":\"1.0.0\",\"ips\":[{{\"address\":\"10.1.0.5/16\"}}]}}';;\n\
         DEL) rm -f {held};;\n\
         esac",
        log = log.display(),
        held = held.display()
    );
    script(dir, "ipam", &body)
}

/// An interface plugin whose step after IPAM fails, as creating an
/// interface whose name exists does; its error type is `cni_types::Error`.
struct InterfaceExists;

impl Plugin for InterfaceExists {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;
    // A test double: its ADD changes nothing on the host, so there is
    // nothing to verify and CHECK succeeds.
    fn check(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let result = cni_invoke::add_with_cleanup("ipam", req, |_| -> Result<Result100, Error> {
            Err(Error::new(Code::INTERNAL, "interface eth0 exists"))
        })?;
        Ok(result.into())
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
}

fn add(dir: &Path) -> Outcome {
    TestRequest::new("ADD")
        .env("CNI_CONTAINERID", "c1")
        .env("CNI_NETNS", "/var/run/netns/none")
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", dir)
        .stdin(r#"{"cniVersion":"1.0.0","name":"net","type":"x","ipam":{"type":"ipam"}}"#)
        .run(&InterfaceExists, &cni_version::PluginInfo::all())
}

#[test]
fn a_failed_step_after_the_delegated_add_releases_it_and_a_refused_add_releases_nothing() {
    let dir = tempfile::tempdir().unwrap();
    refusing_ipam(dir.path());
    let commands = || std::fs::read_to_string(dir.path().join("commands")).unwrap();

    // Nothing held: the ADD reserves, the step fails, the DEL releases.
    let first = add(dir.path());
    assert_eq!(
        first.error().map(|e| e.msg),
        Some("interface eth0 exists".into())
    );
    assert_eq!(commands(), "ADD\nDEL\n");

    // A live attachment holds an address: the repeated ADD is refused by
    // the delegate, its error is the answer, and no DEL runs.
    std::fs::write(dir.path().join("held"), "").unwrap();
    let repeated = add(dir.path());
    assert_eq!(
        repeated.error().map(|e| e.code),
        Some(Code(104)),
        "{repeated:?}"
    );
    assert_eq!(commands(), "ADD\nDEL\nADD\n");
    assert!(dir.path().join("held").exists());
}

#[test]
fn a_release_that_fails_too_is_logged_and_the_adds_error_is_the_answer() {
    // The delegate reserves on ADD and cannot release on DEL.
    let dir = tempfile::tempdir().unwrap();
    script(
        dir.path(),
        "ipam",
        "cat >/dev/null\ncase $CNI_COMMAND in\n\
         ADD) echo '{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.1.0.5/16\"}]}';;\n\
         DEL) echo '{\"code\":11,\"msg\":\"store unreachable\"}'; exit 1;;\n\
         esac",
    );
    let out = add(dir.path());
    assert_eq!(
        out.error().map(|e| e.msg),
        Some("interface eth0 exists".into())
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("delegated DEL of ipam after a failed ADD also failed")
            && stderr.contains("store unreachable"),
        "{stderr}"
    );
}
