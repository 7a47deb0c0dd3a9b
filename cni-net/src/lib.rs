//! What a CNI plugin does inside the container's network namespace:
//! namespaces, links, addresses, routes and sysctls over rtnetlink and
//! `/proc/sys`, synchronous, without running `ip`.
//!
//! - [`Netns`] (`netns.rs`): open `CNI_NETNS` ([`Netns::of`], and
//!   [`Netns::of_for_del`]: DEL's one rule for a namespace already gone),
//!   compare namespaces, run a closure inside one with [`Netns::run`], or
//!   get a socket there with [`Netns::socket`] (Go: plugins `pkg/ns`).
//! - [`Netlink`] (`socket.rs`): the rtnetlink socket. Its operations are
//!   grouped by object: links (`link.rs`, like `ip link`, each named by a
//!   [`LinkId`] and typed by a [`LinkKind`] (`kind.rs`): MTU, MAC, flags;
//!   `veth.rs`: pairs into another namespace, a container's pair with
//!   [`ContainerVeth`]; `bridge.rs`: bridges and ports, hairpin and isolation;
//!   `bridge_vlan.rs`: VLAN filtering and a port's VLANs, [`PortVlan`]), addresses
//!   (`addr.rs`, like `ip addr`),
//!   routes (`route.rs`, like `ip route`, with the 1.1.0 route fields),
//!   a link's alias (`alias.rs`, `ip link set DEV alias`), moves between
//!   namespaces (`netns_move.rs`, `ip link set DEV netns NS`, and
//!   [`Netns::unnamed`] to stage them in), policy routing rules
//!   (`rule.rs`, [`Rule`], like `ip rule`), routes kept whole to move
//!   between tables (`table.rs`, [`TableRoute`]), VRF devices (`vrf.rs`,
//!   [`Netlink::add_vrf`], `ip link add type vrf`)
//!   (Go: vishvananda/netlink, plugins `pkg/ip`), and traffic control
//!   ([`tc`], like `tc`: tbf and ingress qdiscs, a u32 filter with a
//!   mirred redirect, the kernel's clock; an ifb to redirect to is a
//!   [`LinkKind::Ifb`] link, [`Netlink::add_ifb`]).
//! - Links on a parent and taps (`link_kinds/`): macvlan, ipvlan and vlan
//!   links created straight into a namespace ([`Netlink::add_sublink`],
//!   [`Sublink`], [`SublinkKind`] with [`MacvlanMode`], [`IpvlanMode`],
//!   [`VlanId`]; read back with [`Netlink::sublink_kind`]), and tap
//!   devices made with the TUN ioctls ([`Netns::add_tap`], [`Tap`]). A
//!   kernel without the kind is [`NetError::NoKernelSupport`].
//! - [`configure_iface`] (`configure.rs`): a `Result100`'s interface into
//!   the kernel (Go: `ipam.ConfigureIface`); [`check_interface`],
//!   [`check_addresses`], [`check_routes`] (`check.rs`): CHECK, naming the
//!   first difference (Go: `ip.ValidateExpected*`).
//! - [`Netns::sysctl`], [`Netns::set_sysctl`], [`Netns::enable_forwarding`]
//!   (`sysctl.rs`): `net.*` keys of a namespace (Go: `pkg/utils/sysctl`);
//!   [`sysctl_for_ifname`] puts an interface into a key's `IFNAME`.
//! - [`testing::TempNetns`] (`testing.rs`): a namespace removed on drop,
//!   and [`TestRequest`](cni_skel::TestRequest)s for it (Go: `pkg/testutils`).
//! - [`NetError`] (`error.rs`): one error that names the object and the
//!   operation ([`Op`]) and keeps the kernel's errno
//!   ([`NetError::is_not_found`], [`NetError::is_exists`]); it becomes a
//!   CNI error with a default code, and the plugin may choose another.
//!
//! # Why namespaces and threads don't mix
//! A network namespace belongs to a thread, not to a process: `setns`
//! moves only the calling thread. A thread left inside a container's
//! namespace (by a failure to switch back, or by a runtime that moves a
//! task to another thread mid-way) silently does the next pod's work in
//! the wrong place. So nothing here switches the caller's threads:
//! [`Netns::run`] runs its closure on a new thread that joins the
//! namespace and ends with the closure, and a netlink socket, once opened
//! inside a namespace, talks to that namespace from any thread. (Go:
//! plugins `pkg/ns/README.md` tells the same story for goroutines.)
//!
//! # Example: a chained plugin setting MTU and MAC of `CNI_IFNAME`
//! This is `examples/tune.rs`; `tests/tune_example.rs` runs it as root
//! against a temporary namespace ([`testing::TempNetns`]).
//! ```no_run
#![doc = include_str!("../examples/tune.rs")]
//! ```
//!
//! # Where we deliberately differ from the reference
//! - [`Netns::run`] uses a new thread per call instead of switching and
//!   restoring the caller's thread: a thread that cannot switch back
//!   cannot exist. It costs a thread start (tens of microseconds).
//! - A namespace path that is absent or not a namespace is CNI code 8
//!   (invalid network namespace), not the reference plugins' untyped 999.
//! - [`Netlink::add_address`] and [`Netlink::add_route`] refuse what is
//!   already there (`EEXIST`, named in the error); [`configure_iface`]
//!   replaces routes, so a route the kernel made is not a failure.
//! - [`configure_iface`] leaves `disable_ipv6` alone (Go sets it to 0):
//!   a socket may be used outside its namespace's thread, where
//!   `/proc/sys` is another namespace's; use [`Netns::set_sysctl`].
//! - [`host_veth_names`] are derived (a hash of container id and
//!   interface name, then with a counter when one is taken), where Go's
//!   `ip.RandomVethName` is random, so a test or an operator can find the
//!   host end; DEL and CHECK find it from the container's side
//!   ([`Link::veth_peer`]), as Go does.
//! - [`validate_ifname`] refuses control characters (NUL among them),
//!   which the kernel takes, and netlink cuts a name at NUL.
//! - [`Netns::of_for_del`] reads a path that is no longer a namespace as
//!   gone (DEL succeeds), where Go's plugins fail with 999.

mod addr;
mod alias;
mod bridge;
mod bridge_vlan;
mod check;
mod configure;
mod error;
mod ifreq;
mod kind;
mod link;
mod link_kinds;
pub mod link_plugin;
mod netns;
mod netns_move;
mod op;
mod route;
mod rule;
mod socket;
mod sysctl;
mod table;
pub mod tc;
pub mod testing;
mod validate;
mod veth;
mod vrf;

pub use addr::{Address, Dad};
pub use alias::MAX_ALIAS_LEN;
pub use bridge::PortSettings;
pub use bridge_vlan::{vlan_ranges, PortVlan, VLAN_IDS};
pub use check::{check_addresses, check_interface, check_routes, differs};
/// The hardware address of [`Link::mac`] and [`Netlink::set_mac`]: the
/// SDK's one MAC type, re-exported from `cni_types`, which configurations
/// and [`requested_mac`](cni_types::conventions::requested_mac) give.
pub use cni_types::Mac;
pub use configure::configure_iface;
pub use error::NetError;
pub use kind::LinkKind;
pub use link::{link_mac, link_name, Link, LinkId};
pub use link_kinds::{
    InvalidVlanId, IpvlanMode, MacvlanMode, Sublink, SublinkKind, Tap, UnknownIpvlanMode,
    UnknownMacvlanMode, VlanId,
};
pub use netns::{Netns, NetnsId};
pub use op::Op;
pub use route::{LiveRoute, MAIN_TABLE};
pub use rule::Rule;
pub use socket::Netlink;
pub use sysctl::{sysctl_for_ifname, sysctl_path, validate_sysctl_value};
pub use table::TableRoute;
pub use validate::{configured_mtu, validate_ifname, validate_mtu, MAX_IFNAME_LEN};
pub use veth::{
    add_container_pair, host_veth_name, host_veth_names, ContainerVeth, VethPair, HOST_VETH_NAMES,
};
