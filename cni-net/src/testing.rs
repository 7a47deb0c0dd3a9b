//! A test kit: temporary network namespaces, removed on drop.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use cni_skel::TestRequest;
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::{unshare, CloneFlags};

use crate::{Link, NetError, Netns, Op, VethPair};

/// Where named namespaces live, as `ip netns` keeps them.
const NETNS_DIR: &str = "/run/netns";

/// A network namespace for a test, mounted at `/run/netns/NAME` (so `ip
/// netns` and a plugin's `CNI_NETNS` see it), deleted with everything in
/// it when dropped, also when the test panics.
///
/// Dereferences to its [`Netns`]: `tmp.run(..)`, `tmp.socket()`.
///
/// Go: `testutils.NewNS` (plugins `pkg/testutils`).
#[derive(Debug)]
pub struct TempNetns {
    netns: Netns,
    name: String,
}

impl TempNetns {
    /// A new, empty namespace named `cni-net-TAG-PID-N` (unique within the
    /// machine while this process lives). Needs root (`CAP_SYS_ADMIN`);
    /// without it the error says so.
    ///
    /// ```no_run
    /// use cni_net::testing::TempNetns;
    ///
    /// let tmp = TempNetns::new("doc")?;
    /// let eth0 = tmp.add_veth("eth0", "peer0", None)?;
    /// assert_eq!(tmp.socket()?.link("eth0")?.index, eth0.index);
    /// // Removed here, with its links.
    /// # Ok::<(), cni_net::NetError>(())
    /// ```
    pub fn new(tag: &str) -> Result<TempNetns, NetError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "cni-net-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = Path::new(NETNS_DIR).join(&name);
        let failed = |source: io::Error| NetError::Netns {
            op: Op::CreateNetns,
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(NETNS_DIR).map_err(failed)?;
        File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(failed)?;
        if let Err(e) = mount_new_netns(&path) {
            let _ = std::fs::remove_file(&path);
            return Err(failed(e));
        }
        let netns = match Netns::open(&path) {
            Ok(netns) => netns,
            Err(e) => {
                unmount(&path);
                return Err(e);
            }
        };
        Ok(TempNetns { netns, name })
    }

    /// The name under `/run/netns` (`ip -n NAME ..`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A veth pair inside this namespace (`name` and `peer_name`), or with
    /// the peer in `peer_netns`; returns the end named `name`.
    pub fn add_veth(
        &self,
        name: &str,
        peer_name: &str,
        peer_netns: Option<&Netns>,
    ) -> Result<Link, NetError> {
        self.socket()?.add_veth(&VethPair {
            name,
            peer_name,
            peer_netns,
            mtu: None,
            peer_mac: None,
            master: None,
        })
    }

    /// A dummy link inside this namespace (kernels without `CONFIG_DUMMY`
    /// refuse: use [`TempNetns::add_veth`] there).
    pub fn add_dummy(&self, name: &str) -> Result<Link, NetError> {
        self.socket()?.add_dummy(name)
    }

    /// An in-process request for this namespace: `CNI_COMMAND` set to
    /// `command`, `CNI_NETNS` to this namespace, `CNI_CONTAINERID` to its
    /// name and `CNI_IFNAME` to `ifname`; add stdin and anything else,
    /// then `.run(&plugin, &versions)`.
    pub fn request(&self, command: &str, ifname: &str) -> TestRequest {
        TestRequest::new(command)
            .env("CNI_CONTAINERID", self.name.as_str())
            .env("CNI_NETNS", self.path())
            .env("CNI_IFNAME", ifname)
    }

    /// `ip -d -j link show NAME` in this namespace: the kernel's view of a
    /// link, read by another tool than the one that made it.
    pub fn link_details(&self, name: &str) -> io::Result<serde_json::Value> {
        let out = self.command("ip", &["-n", &self.name, "-d", "-j", "link", "show", name])?;
        let mut links: Vec<serde_json::Value> = serde_json::from_slice(&out)?;
        match links.is_empty() {
            true => Err(io::Error::other(format!("ip listed no link {name:?}"))),
            false => Ok(links.swap_remove(0)),
        }
    }

    /// `nft -j list ruleset` in this namespace without what differs
    /// between equal rulesets (`metainfo`, `handle`s), to compare two
    /// namespaces' or a ruleset before and after.
    pub fn nft_ruleset(&self) -> io::Result<serde_json::Value> {
        let out = self.command(
            "ip",
            &["netns", "exec", &self.name, "nft", "-j", "list", "ruleset"],
        )?;
        let mut value: serde_json::Value = serde_json::from_slice(&out)?;
        if let Some(objects) = value["nftables"].as_array_mut() {
            objects.retain(|object| object.get("metainfo").is_none());
        }
        strip_handles(&mut value);
        Ok(value)
    }

    /// Runs `program args` inside this namespace (`ip netns exec`), fed
    /// `stdin`: what it did (status, stdout, stderr). For the tools a test
    /// checks against, such as `iptables-restore`.
    ///
    /// ```no_run
    /// use cni_net::testing::TempNetns;
    ///
    /// let tmp = TempNetns::new("doc")?;
    /// let out = tmp.exec("ip", &["-j", "link", "show"], "")?;
    /// assert!(out.status.success());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exec(&self, program: &str, args: &[&str], stdin: &str) -> io::Result<Output> {
        use std::io::Write;
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.name, program])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        if let Some(mut input) = child.stdin.take() {
            input.write_all(stdin.as_bytes())?;
        }
        child.wait_with_output()
    }

    /// A command's stdout, or an error with its stderr.
    fn command(&self, program: &str, args: &[&str]) -> io::Result<Vec<u8>> {
        let out = Command::new(program).args(args).output()?;
        match out.status.success() {
            true => Ok(out.stdout),
            false => Err(io::Error::other(format!(
                "{program} {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
        }
    }
}

/// Every `handle` key removed, at any depth.
fn strip_handles(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("handle");
            map.values_mut().for_each(strip_handles);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_handles),
        _ => {}
    }
}

impl Deref for TempNetns {
    type Target = Netns;

    fn deref(&self) -> &Netns {
        &self.netns
    }
}

/// Directories where the SDK keeps state per network namespace, a
/// subdirectory named by the namespace's inode in each: cni-netfilter's
/// rule records (`cni_netfilter::nft::RECORD_DIR`, which a test of that
/// crate checks is listed here). A [`TempNetns`] removes its own when
/// dropped ([`remove_namespace_state`]): a test that ends with rules in place would leave them behind,
/// and a later namespace may get the same inode.
pub const NAMESPACE_STATE_DIRS: &[&str] = &["/run/cni/nft-rules"];

/// Removes what [`NAMESPACE_STATE_DIRS`] keep for the namespace mounted
/// at `netns` (before it goes: its inode names the state). What a test
/// kit's namespace does when dropped.
pub fn remove_namespace_state(netns: &Path) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(meta) = std::fs::metadata(netns) {
        for dir in NAMESPACE_STATE_DIRS {
            let _ = std::fs::remove_dir_all(Path::new(dir).join(meta.ino().to_string()));
        }
    }
}

impl Drop for TempNetns {
    fn drop(&mut self) {
        remove_namespace_state(self.netns.path());
        unmount(self.netns.path());
    }
}

/// Creates a namespace on a thread of its own and bind-mounts it at
/// `path`, as `ip netns add` does.
fn mount_new_netns(path: &Path) -> io::Result<()> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                unshare(CloneFlags::CLONE_NEWNET).map_err(|e| {
                    if e == nix::errno::Errno::EPERM {
                        io::Error::new(
                            io::ErrorKind::PermissionDenied,
                            "creating a network namespace needs root (CAP_SYS_ADMIN)",
                        )
                    } else {
                        e.into()
                    }
                })?;
                mount(
                    Some("/proc/thread-self/ns/net"),
                    path,
                    None::<&str>,
                    MsFlags::MS_BIND,
                    None::<&str>,
                )
                .map_err(io::Error::from)
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
    })
}

fn unmount(path: &Path) {
    let _ = umount2(path, MntFlags::MNT_DETACH);
    let _ = std::fs::remove_file(path);
}

/// The addresses `host-local` (storing in `dir`) holds for `network`: what
/// a plugin's tests expect gone after DEL or a failed ADD.
pub fn held_addresses(dir: &std::path::Path, network: &str) -> Vec<String> {
    std::fs::read_dir(dir.join(network))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
        .collect()
}
