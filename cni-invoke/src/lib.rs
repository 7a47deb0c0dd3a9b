//! Running CNI plugins: the runtime side of the protocol, and delegation.
//!
//! - [`find_in_path`], [`exec_plugin`], [`exec_with_result`]: find a plugin
//!   on `CNI_PATH` and execute it with an [`Invocation`], mapping its exit
//!   into a result or a CNI error (the plugin's own code kept), within an
//!   optional [`Deadline`].
//! - [`exec_raw`]: execute a plugin and keep its exit, stdout and stderr
//!   unprocessed (up to [`STDOUT_LIMIT`] and [`STDERR_LIMIT`] bytes), with
//!   an optional deadline (for tools that judge a plugin's output, such as
//!   `cni-conformance`); a [`Cancel`] switch stops running plugins early.
//! - [`delegate_add`] and friends, [`add_with_cleanup`]: spec section 4, for
//!   plugins that run their IPAM plugin; [`set_builtins`] and
//!   [`mark_builtin!`] let a plugin that carries its delegate's code run it
//!   in-process when the delegate's file is that same plugin.
//! - [`get_version_info`], [`check_plugin_version`]: `VERSION` probing.
//! - [`Runtime`], [`NetworkList`], [`RuntimeConf`]: spec section 3, running
//!   a configuration list for one attachment (ADD, CHECK, DEL, GC, STATUS),
//!   with a result cache in libcni's format.
//!
//! `cnitool`, the runtime on the command line for trying plugins, is a
//! crate of its own, so a plugin that delegates pulls in none of its
//! dependencies.
//!
//! ```no_run
//! use cni_invoke::{NetworkList, Runtime, RuntimeConf};
//!
//! let net = NetworkList::load("/etc/cni/net.d".as_ref(), "mynet")?;
//! let runtime = Runtime::new(vec!["/opt/cni/bin".into()], "/var/lib/cni");
//! let rt = RuntimeConf {
//!     container_id: "c1".into(),
//!     netns: "/var/run/netns/c1".into(),
//!     ifname: "eth0".into(),
//!     ..RuntimeConf::default()
//! };
//! let result = runtime.add(&net, &rt)?;
//! runtime.check(&net, &rt)?;
//! runtime.del(&net, &rt)?;
//! # let _ = result; Ok::<(), cni_types::Error>(())
//! ```
//!
//! Where we depart from the reference runtime library:
//! - `capabilities` is removed from each plugin's execution configuration,
//!   as the spec requires (libcni passes it through).
//! - The cache file is written atomically (a temporary file of its own,
//!   renamed into place).
//! - A plugin's output is kept up to [`STDOUT_LIMIT`] and [`STDERR_LIMIT`]
//!   bytes, the rest read and counted; libcni keeps all of it.
//! - A plugin past its [`Deadline`] gets `SIGTERM`, then `SIGKILL` after
//!   [`KILL_GRACE`], sent to its own process group so its children go too;
//!   libcni's context kills the plugin alone, at once. Without a deadline
//!   nothing changes: the plugin stays in our process group.
//! - A plugin sees exactly the trace context of its [`Invocation`], never
//!   one inherited from our environment; libcni appends the context's to
//!   the inherited environment.
//! - A plugin this binary carries built in ([`Builtin`]) runs in-process
//!   in place of a file of its name that carries its mark; libcni and the
//!   reference's delegation always execute the file.

mod alongside;
mod builtin;
mod cache;
mod cancel;
mod deadline;
mod delegate;
mod exec;
mod find;
mod limits;
mod list;
mod raw;
mod runtime;
mod version;

pub use alongside::{add_alongside, add_alongside_then, add_ipam, del_alongside, FirstError};
#[doc(hidden)]
pub use builtin::__mark_bytes;
pub use builtin::{set_builtins, Builtin, BuiltinMain, MARK_SECTION};
pub use cache::CachedAttachment;
pub use cancel::Cancel;
pub use deadline::{Deadline, Stopped, KILL_GRACE};
pub use delegate::{
    add_with_cleanup, delegate_add, delegate_check, delegate_del, delegate_gc, delegate_status,
    release_after_failed_add,
};
pub use exec::{exec_plugin, exec_with_result, exec_without_result, Invocation};
pub use find::find_in_path;
pub use limits::{STDERR_LIMIT, STDOUT_LIMIT};
pub use list::NetworkList;
pub use raw::{excerpt, exec_raw, Exit, RawOutput};
pub use runtime::{Runtime, RuntimeConf};
pub use version::{check_plugin_version, get_version_info};
