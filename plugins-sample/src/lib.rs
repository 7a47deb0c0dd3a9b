//! Sample CNI plugins built on the SDK.
//!
//! - [`noop`]: a drop-in replacement for the reference test double
//!   (`plugins/test/noop`), driven by a debug file exactly as runtime test
//!   suites drive the reference one.
//! - [`dns_mac`]: a small chained plugin to copy when starting a plugin: a
//!   typed, validated configuration, a change to the previous result, CHECK
//!   that verifies it, an idempotent DEL.
//!
//! - [`delegator`]: an interface-plugin skeleton that delegates IPAM
//!   (spec section 4) and releases the address when its ADD fails.
//!
//! - [`veth`]: an interface plugin that does real work: a veth pair into
//!   the container namespace, addresses from its IPAM plugin, routes both
//!   ways, all through the `cni_net` library.
//!
//! - `ipam-file` and `ipam-etcd`: thin binaries over the `cni-ipam`
//!   crate: the reference `host-local`'s configuration and on-disk store,
//!   with GC and STATUS, and the same engine on a cluster-wide etcd store.
//!
//! - [`agent`]: `agent-forward`, an async plugin forwarding each command
//!   to a local agent over a Unix socket (a daemon shim), and the agent.
//!
//! - [`loopback`]: a drop-in for the reference `loopback`: `lo` up in the
//!   container namespace.
//!
//! - [`tuning`]: a drop-in for the reference `tuning`: sysctls, MTU, MAC,
//!   promiscuous and all-multicast modes, restored on DEL.
//!
//! - [`bridge`]: a drop-in for the reference `bridge`: a host bridge, a
//!   veth port per container, IPAM delegated, the gateway on the bridge.
//!
//! - [`ptp`]: a drop-in for the reference `ptp`: a routed veth pair per
//!   container, IPAM delegated, the gateway on the host end, `ipMasq`.
//!
//! - `host-local`: a drop-in for the reference IPAM plugin of that name,
//!   the binary `ipam-file` is under the reference's name.
//!
//! - [`portmap`]: a drop-in for the reference `portmap`: host ports
//!   forwarded to the container (iptables or nftables, the reference's
//!   layouts), hairpin and localhost access, stale UDP flows cleared.
//!
//! - [`firewall`]: a drop-in for the reference `firewall`: a container's
//!   traffic let through the host's forwarding filter and bridges isolated
//!   (`ingressPolicy`), the reference's iptables layout or our nftables
//!   table.
//!
//! - [`bandwidth`]: a drop-in for the reference `bandwidth`: tbf qdiscs
//!   shaping what a container receives and, through an ifb, what it
//!   sends.
//!
//! - [`macvlan`]: a drop-in for the reference `macvlan`: a macvlan link
//!   on a host link, straight into the container, IPAM delegated or
//!   layer 2 only; [`ipvlan`] and [`vlan`] likewise for the reference
//!   plugins of those names.
//!
//! - [`tap`]: a drop-in for the reference `tap`: a persistent tap device
//!   in the container (made with the TUN ioctls) for a VMM, optionally a
//!   bridge port; [`dummy`]: the reference `dummy`, IPAM's addresses on a
//!   dummy link.
//!
//! - [`host_device`]: `host-device`, a drop-in for the reference plugin:
//!   an existing host device moved into the container, and back on DEL.
//!
//! - [`sbr`]: a drop-in for the reference `sbr`: a routing table per
//!   address of the interface, chosen by source (`ip rule`).
//!
//! - [`static_ipam`]: `static`, a drop-in for the reference IPAM plugin:
//!   the configured addresses, routes and DNS, or the runtime's.
//!
//! - [`vrf`]: a drop-in for the reference `vrf`: the container's
//!   interface in a VRF of its namespace.
//!
//! - `dhcp`: a drop-in for the reference IPAM plugin of that name and its
//!   daemon (`dhcp daemon`), the binary over the `cni-dhcp` crate.
//!
//! The binaries in `src/bin` are thin `main`s over these modules.

pub mod agent;
pub mod bandwidth;
pub mod bridge;
pub mod delegator;
pub mod dns_mac;
pub mod dummy;
pub mod firewall;
pub mod host_device;
pub mod ipvlan;
pub mod loopback;
pub mod macvlan;
pub mod noop;
pub mod portmap;
pub mod ptp;
pub mod sbr;
pub mod static_ipam;
pub mod tap;
pub mod tuning;
pub mod veth;
pub mod vlan;
pub mod vrf;

/// The sample plugins that carry our `host-local` built in
/// ([`cni_ipam::host_local::BUILTINS`]): every one that takes an `ipam`
/// section, so each of its ADD, DEL, CHECK, GC and STATUS is one process
/// when the `host-local` on `CNI_PATH` is ours, for about 230 KiB more of
/// each binary (mapped, not read, until used). Named for the test that
/// checks each one registers it.
pub const CARRIERS: [&str; 9] = [
    "bridge",
    "ptp",
    "macvlan",
    "ipvlan",
    "vlan",
    "tap",
    "dummy",
    "host-device",
    "veth",
];

#[cfg(test)]
mod test_support;
