//! Which operation a [`NetError`](crate::NetError) reports as failed.

/// Which operation failed: the verb of a
/// [`NetError::Kernel`](crate::NetError::Kernel) or
/// [`NetError::Netns`](crate::NetError::Netns), so a plugin matches on it
/// rather than on text.
///
/// Its `Display` is the verb phrase the error message uses: `failed to
/// {op} {object}` (`failed to add address 10.1.0.2/24 to link "eth0"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// Open a namespace path ([`Netns::open`](crate::Netns::open)).
    OpenNetns,
    /// Enter a namespace (`setns`).
    EnterNetns,
    /// Create a namespace (the test kit).
    CreateNetns,
    /// Read a namespace's identity (`stat`).
    StatNetns,
    /// Open an rtnetlink socket ([`Netlink::open`](crate::Netlink::open)).
    OpenSocket,
    /// Look a link up (`ip link show NAME`).
    LookUpLink,
    /// List links, addresses or routes.
    List,
    /// Create a veth pair (`ip link add type veth`).
    CreateVeth,
    /// Create a bridge (`ip link add type bridge`).
    CreateBridge,
    /// Create a dummy link (`ip link add type dummy`).
    CreateDummy,
    /// Create an ifb link (`ip link add type ifb`).
    CreateIfb,
    /// Create a macvlan link (`ip link add link PARENT type macvlan`).
    CreateMacvlan,
    /// Create an ipvlan link (`ip link add link PARENT type ipvlan`).
    CreateIpvlan,
    /// Create a vlan link (`ip link add link PARENT type vlan`).
    CreateVlan,
    /// Create a tap device (`ip tuntap add mode tap`).
    CreateTap,
    /// Create a VRF device (`ip link add type vrf table T`).
    CreateVrf,
    /// Add a qdisc (`tc qdisc add`).
    AddQdisc,
    /// Delete a qdisc (`tc qdisc del`).
    DeleteQdisc,
    /// Add a filter (`tc filter add`).
    AddFilter,
    /// Read the kernel's packet scheduler clock (`/proc/net/psched`).
    ReadPsched,
    /// Use an existing link as a bridge.
    UseAsBridge,
    /// Rename a link (`ip link set NAME name NEW`).
    Rename,
    /// Set a link up (`ip link set NAME up`).
    SetUp,
    /// Set a link down (`ip link set NAME down`).
    SetDown,
    /// Set promiscuous mode (`ip link set NAME promisc on|off`).
    SetPromisc,
    /// Set all-multicast mode (`ip link set NAME allmulticast on|off`).
    SetAllmulti,
    /// Set the MTU (`ip link set NAME mtu N`).
    SetMtu,
    /// Set the MAC address (`ip link set NAME address MAC`).
    SetMac,
    /// Make a link a bridge port (`ip link set NAME master BRIDGE`).
    SetMaster,
    /// Set hairpin mode of a bridge port.
    SetHairpin,
    /// Isolate a bridge port (`ip link set NAME type bridge_slave isolated on`).
    SetIsolated,
    /// Set a bridge port's options and state in one request
    /// ([`Netlink::set_port`](crate::Netlink::set_port)).
    SetPort,
    /// Turn a bridge's VLAN filtering on or off
    /// (`ip link set NAME type bridge vlan_filtering 1`).
    SetVlanFiltering,
    /// Add VLANs to a bridge port (`bridge vlan add`).
    AddPortVlan,
    /// Remove VLANs from a bridge port (`bridge vlan del`).
    DeletePortVlan,
    /// Delete a link (`ip link del NAME`).
    DeleteLink,
    /// Move a link into another namespace (`ip link set NAME netns NS`).
    MoveToNetns,
    /// Set a link's alias (`ip link set NAME alias ALIAS`).
    SetAlias,
    /// Add an address (`ip addr add`).
    AddAddress,
    /// Delete an address (`ip addr del`).
    DeleteAddress,
    /// Use an address whose duplicate address detection failed.
    UseAddress,
    /// Add or replace a route (`ip route add|replace`).
    AddRoute,
    /// Delete a route (`ip route del`).
    DeleteRoute,
    /// Add a policy routing rule (`ip rule add`).
    AddRule,
    /// Delete a policy routing rule (`ip rule del`).
    DeleteRule,
    /// Read a sysctl.
    ReadSysctl,
    /// Write a sysctl.
    WriteSysctl,
}

impl Op {
    /// The verb phrase of the error message.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::OpenNetns => "open",
            Op::EnterNetns => "enter",
            Op::CreateNetns => "create",
            Op::StatNetns => "stat",
            Op::OpenSocket => "open a netlink socket in",
            Op::LookUpLink => "look up link",
            Op::List => "list",
            Op::CreateVeth => "create veth pair",
            Op::CreateBridge => "create bridge",
            Op::CreateDummy => "create dummy link",
            Op::CreateIfb => "create ifb link",
            Op::CreateMacvlan
            | Op::CreateIpvlan
            | Op::CreateVlan
            | Op::CreateTap
            | Op::CreateVrf => "create",
            Op::AddQdisc => "add qdisc",
            Op::DeleteQdisc => "delete qdisc",
            Op::AddFilter => "add filter",
            Op::ReadPsched => "read",
            Op::UseAsBridge => "use",
            Op::Rename => "rename",
            Op::SetUp => "set up",
            Op::SetDown => "set down",
            Op::SetPromisc => "set promiscuous mode of",
            Op::SetAllmulti => "set all-multicast mode of",
            Op::SetMtu => "set the MTU of",
            Op::SetMac => "set the MAC address of",
            Op::SetMaster => "set the master of",
            Op::SetHairpin => "set hairpin mode of",
            Op::SetIsolated => "set port isolation of",
            Op::SetPort => "set the bridge port options of",
            Op::SetVlanFiltering => "set VLAN filtering of",
            Op::AddPortVlan => "add VLANs to",
            Op::DeletePortVlan => "remove VLANs from",
            Op::DeleteLink => "delete",
            Op::MoveToNetns => "move",
            Op::SetAlias => "set the alias of",
            Op::AddAddress => "add address",
            Op::DeleteAddress => "delete address",
            Op::UseAddress => "use address",
            Op::AddRoute => "add route",
            Op::DeleteRoute => "delete route",
            Op::AddRule => "add rule",
            Op::DeleteRule => "delete rule",
            Op::ReadSysctl => "read sysctl",
            Op::WriteSysctl => "write sysctl",
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
