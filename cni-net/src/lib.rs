//! What a CNI plugin does inside the container's network namespace:
//! namespaces, links, addresses and routes over rtnetlink, synchronous and
//! without running `ip`.
//!
//! - [`Netns`] (`netns.rs`): open `CNI_NETNS`, compare namespaces, run a
//!   closure inside one with [`Netns::run`], or get a socket there with
//!   [`Netns::socket`] (Go: plugins `pkg/ns`).
//! - [`Netlink`] (`socket.rs`): the rtnetlink socket; its operations are
//!   grouped by object: links (`link.rs`, like `ip link`), addresses
//!   (`addr.rs`, like `ip addr`), routes (`route.rs`, like `ip route`)
//!   (Go: vishvananda/netlink, plugins `pkg/ip`).
//! - [`NetError`] (`error.rs`): one error that names the object and keeps
//!   the kernel's errno; the plugin chooses the CNI code.
//!
//! # Why namespaces and threads don't mix
//! A network namespace belongs to a thread, not to a process: `setns`
//! moves only the calling thread. A thread left inside a container's
//! namespace (by a failure to switch back, or by a runtime that moves a
//! task to another thread mid-way) silently does the next pod's work in
//! the wrong place. So nothing here switches the caller's threads:
//! [`Netns::run`] runs its closure on a new thread that joins the
//! namespace and ends with the closure, and a netlink socket, once
//! opened inside a namespace, talks to that namespace from any thread.
//! (Go: plugins `pkg/ns/README.md` tells the same story for goroutines.)

mod addr;
mod error;
mod link;
mod mac;
mod netns;
mod route;
mod socket;

pub use addr::{Address, Dad};
pub use error::NetError;
pub use link::{host_veth_name, validate_ifname, Link, VethPair, MAX_IFNAME_LEN};
pub use mac::{Mac, MacError};
pub use netns::{Netns, NetnsId};
pub use route::{LiveRoute, MAIN_TABLE};
pub use socket::Netlink;
