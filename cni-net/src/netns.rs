//! Network namespaces: open one by path, compare two, run code inside one.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::sched::{setns, CloneFlags};
use nix::sys::statfs::{fstatfs, NSFS_MAGIC, PROC_SUPER_MAGIC};

use cni_skel::Request;
use cni_types::{Code, Error};

use crate::{NetError, Netlink, Op};

/// An open network namespace, such as `CNI_NETNS` names.
///
/// The namespace stays alive while this is open, even if its path is
/// unmounted meanwhile.
///
/// Go: `ns.NetNS` (plugins `pkg/ns`).
#[derive(Debug)]
pub struct Netns {
    file: File,
    path: PathBuf,
}

/// A namespace's identity: two [`Netns`] with the same identity are the
/// same namespace, whatever their paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NetnsId {
    dev: u64,
    ino: u64,
}

impl Netns {
    /// Opens the namespace at `path` (a bind mount such as
    /// `/run/netns/NAME`, or `/proc/PID/ns/net`).
    ///
    /// An absent path is [`NetError::NoSuchNetns`]; a path that is not a
    /// namespace (a plain file, a stale mount point) is
    /// [`NetError::NotANetns`]; both name the path.
    ///
    /// Go: `ns.GetNS`.
    pub fn open(path: impl AsRef<Path>) -> Result<Netns, NetError> {
        let path = path.as_ref().to_path_buf();
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(NetError::NoSuchNetns { path })
            }
            Err(source) => {
                return Err(NetError::Netns {
                    op: Op::OpenNetns,
                    path,
                    source,
                })
            }
        };
        let fs = fstatfs(&file).map_err(|e| NetError::Netns {
            op: Op::OpenNetns,
            path: path.clone(),
            source: e.into(),
        })?;
        // Kernels before 3.19 showed namespaces on procfs, not nsfs.
        if fs.filesystem_type() != NSFS_MAGIC && fs.filesystem_type() != PROC_SUPER_MAGIC {
            return Err(NetError::NotANetns { path });
        }
        // Another kind of namespace (ns/mnt, ns/uts) is nsfs too: the
        // kernel names the kind, so it is refused here, before a plugin
        // changes anything (a plugin may not enter the namespace before
        // it makes its first link). A kernel before 4.11 cannot name it
        // (ENOTTY): entering it as a network namespace fails with EINVAL
        // then, reported as NotANetns too.
        if fs.filesystem_type() == NSFS_MAGIC && namespace_kind(&file) == Some(KindIs::Other) {
            return Err(NetError::NotANetns { path });
        }
        Ok(Netns { file, path })
    }

    /// The calling thread's own network namespace.
    ///
    /// Go: `ns.GetCurrentNS`.
    pub fn current() -> Result<Netns, NetError> {
        Netns::open("/proc/thread-self/ns/net")
    }

    /// Opens the namespace `CNI_NETNS` names, failing as a plugin
    /// answers: code 4 when `CNI_NETNS` is unset (the dispatcher already
    /// refuses ADD and CHECK without it), else [`Netns::open`]'s error
    /// with its default code (8 for a path that is not a namespace).
    ///
    /// Go: `ns.GetNS(args.Netns)`.
    pub fn of<C>(req: &Request<'_, C>) -> Result<Netns, Error> {
        let path = req.netns.as_ref().ok_or_else(|| {
            Error::new(Code::INVALID_ENVIRONMENT_VARIABLES, "CNI_NETNS is required")
        })?;
        Ok(Netns::open(path)?)
    }

    /// Opens the namespace `CNI_NETNS` names for DEL: `None` when there
    /// is nothing left to clean up in, which DEL answers with success.
    ///
    /// That is: `CNI_NETNS` unset or empty (runtimes repeat DEL without
    /// it once the sandbox is gone), a path that no longer exists, or one
    /// that is no longer a namespace (the empty mount point a runtime
    /// leaves after unmounting it). Any other failure to open it, such as
    /// a permission refused, is [`Netns::open`]'s error: the namespace
    /// may still hold what DEL must remove.
    ///
    /// The spec: "Plugins should generally complete a `DEL` action without
    /// error even if some resources are missing. [...] the `bridge` plugin
    /// should delegate the DEL action to the IPAM plugin and clean up its
    /// own resources even if the container network namespace and/or
    /// container network interface no longer exist" (SPEC-1.0.0, DEL).
    ///
    /// ```no_run
    /// # fn del(req: &cni_skel::Request<'_, cni_types::NetConf>) -> Result<(), cni_skel::BoxError> {
    /// if let Some(netns) = cni_net::Netns::of_for_del(req)? {
    ///     netns.socket()?.delete_link_if_present(&req.ifname)?;
    /// }
    /// // Then release what lives outside the namespace (IPAM), in any case.
    /// # Ok(()) }
    /// ```
    ///
    /// Go: `ns.WithNetNSPath` in each reference plugin's `cmdDel`, ignoring
    /// `ns.NSPathNotExistErr`. Where we deliberately differ: the reference
    /// fails (code 999) on a path that is not a namespace
    /// (`ns.NSPathNotNSErr`), though nothing is left in it to delete.
    pub fn of_for_del<C>(req: &Request<'_, C>) -> Result<Option<Netns>, Error> {
        let Some(path) = req.netns.as_ref().filter(|p| !p.as_os_str().is_empty()) else {
            return Ok(None);
        };
        match Netns::open(path) {
            Ok(netns) => Ok(Some(netns)),
            Err(NetError::NoSuchNetns { .. } | NetError::NotANetns { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The path this was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The namespace's identity (the nsfs inode).
    pub fn id(&self) -> Result<NetnsId, NetError> {
        let meta = self.file.metadata().map_err(|source| NetError::Netns {
            op: Op::StatNetns,
            path: self.path.clone(),
            source,
        })?;
        Ok(NetnsId {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// Whether the calling thread is in this namespace; false when either
    /// cannot be read.
    fn is_the_calling_threads(&self) -> bool {
        let here = std::fs::metadata("/proc/thread-self/ns/net").map(|m| (m.dev(), m.ino()));
        matches!((here, self.id()), (Ok(here), Ok(id)) if here == (id.dev, id.ino))
    }

    /// Whether `other` is the same namespace (opened from any path).
    pub fn is_same(&self, other: &Netns) -> Result<bool, NetError> {
        Ok(self.id()? == other.id()?)
    }

    /// An rtnetlink socket in this namespace, usable from any thread: it
    /// is opened on a short-lived thread that joins the namespace, so no
    /// thread of the caller changes namespace.
    ///
    /// Go: `netlink.NewHandleAt`.
    pub fn socket(&self) -> Result<Netlink, NetError> {
        self.on_thread(|| {
            Netlink::open_here().map_err(|source| NetError::Netns {
                op: Op::OpenSocket,
                path: self.path.clone(),
                source,
            })
        })
    }

    /// Runs `f` inside this namespace, with a netlink socket opened there,
    /// and returns what it returns.
    ///
    /// `f` runs on a new thread that joins the namespace and ends with
    /// `f`: no thread of the caller ever changes namespace, so this is
    /// safe from thread pools and async runtimes. What `f` opens under
    /// `/proc/sys/net` or `/proc/thread-self/net` belongs to this
    /// namespace (not `/proc/net`: that is `/proc/self/net`, the main
    /// thread's).
    /// A panic in `f` continues in the caller.
    ///
    /// ```no_run
    /// use cni_net::{NetError, Netns};
    ///
    /// let netns = Netns::open("/run/netns/blue")?;
    /// let mtu = netns.run(|nl| Ok::<_, NetError>(nl.link("eth0")?.mtu))?;
    /// # Ok::<(), NetError>(())
    /// ```
    ///
    /// Go: `ns.WithNetNSPath` / `NetNS.Do`. Go's version locks the calling
    /// goroutine's OS thread, switches it, and switches back, so a failure
    /// to switch back leaves a thread in the container's namespace; a
    /// discarded thread cannot be left anywhere.
    pub fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Netlink) -> Result<T, E> + Send,
        T: Send,
        E: From<NetError> + Send,
    {
        self.on_thread(|| {
            let mut netlink = Netlink::open_here().map_err(|source| NetError::Netns {
                op: Op::OpenSocket,
                path: self.path.clone(),
                source,
            })?;
            f(&mut netlink)
        })
    }

    /// Runs `f` on a new thread inside this namespace, or on the calling
    /// thread when it is in this namespace already (a thread costs its
    /// stack's mapping and, on exit, a TLB flush on every CPU the process
    /// runs on: a plugin writing its own namespace's sysctls paid that
    /// for nothing).
    pub(crate) fn on_thread<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce() -> Result<T, E> + Send,
        T: Send,
        E: From<NetError> + Send,
    {
        if self.is_the_calling_threads() {
            return f();
        }
        let joined = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    setns(&self.file, CloneFlags::CLONE_NEWNET).map_err(|e| {
                        if e == nix::errno::Errno::EINVAL {
                            NetError::NotANetns {
                                path: self.path.clone(),
                            }
                        } else {
                            NetError::Netns {
                                op: Op::EnterNetns,
                                path: self.path.clone(),
                                source: e.into(),
                            }
                        }
                    })?;
                    f()
                })
                .join()
        });
        joined.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

nix::ioctl_none!(ns_get_nstype, 0xb7, 0x3);

/// What `NS_GET_NSTYPE` says of a namespace file.
#[derive(Debug, PartialEq, Eq)]
enum KindIs {
    Net,
    Other,
}

/// The kind of the namespace `file` is, when the kernel names it
/// (`NS_GET_NSTYPE`, Linux 4.11).
fn namespace_kind(file: &File) -> Option<KindIs> {
    use std::os::fd::AsRawFd;
    // SAFETY: an ioctl without argument on a descriptor we own.
    #[allow(unsafe_code)]
    let kind = unsafe { ns_get_nstype(file.as_raw_fd()) }.ok()?;
    match kind == CloneFlags::CLONE_NEWNET.bits() {
        true => Some(KindIs::Net),
        false => Some(KindIs::Other),
    }
}

impl AsFd for Netns {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
