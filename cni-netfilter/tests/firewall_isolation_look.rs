//! `firewall::may_isolate`: the look at the isolation chains a plugin
//! makes before it lists a bridge's ports to decide whether the bridge's
//! isolation is to go. It may answer yes where there is none (it is a
//! guard), never no where there is some. Needs root.

mod common;

use cni_netfilter::firewall::{self, IngressPolicy, Rules};
use cni_netfilter::masquerade::Attachment;
use cni_netfilter::BackendKind;
use cni_types::IpNetwork;
use common::{netns, BoxError};

const BRIDGE: &str = "cni-iso0";

fn rules<'a>(id: &'a str, addresses: &'a [IpNetwork], policy: IngressPolicy) -> Rules<'a> {
    Rules {
        attachment: Attachment {
            network: "isolook",
            ifname: "eth0",
            container_id: id,
        },
        addresses,
        admin_chain: firewall::DEFAULT_ADMIN_CHAIN,
        policy,
        bridge: Some(BRIDGE),
    }
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_bridge_may_have_isolation_only_once_a_policy_isolated_it_under_either_layout() {
    for kind in [BackendKind::Nftables, BackendKind::Iptables] {
        let ns = netns("isolook");
        ns.run(|_| {
            let (open, same) = (
                ["10.89.0.2/24".parse()?, "fd00:89::2/64".parse()?],
                ["10.89.0.3/24".parse()?],
            );
            assert!(!firewall::may_isolate(BRIDGE), "{kind:?}: an empty node");
            firewall::add(kind, &rules("open", &open, IngressPolicy::Open))?;
            assert!(
                !firewall::may_isolate(BRIDGE),
                "{kind:?}: an open network isolates nothing"
            );
            firewall::add(kind, &rules("same", &same, IngressPolicy::SameBridge))?;
            assert!(firewall::may_isolate(BRIDGE), "{kind:?}: same-bridge");
            assert!(
                !firewall::may_isolate("cni-other1"),
                "{kind:?}: another bridge"
            );
            firewall::forget_bridge(BRIDGE)?;
            assert!(
                !firewall::may_isolate(BRIDGE),
                "{kind:?}: the isolation forgotten"
            );
            Ok::<_, BoxError>(())
        })
        .unwrap();
    }
}

/// A look the kernel refuses answers yes, so a plugin goes on to list the
/// bridge's ports as it would without the look: never a bridge's
/// isolation kept because nobody could see it. Refused here by the
/// thread's own lack of `CAP_NET_ADMIN`, which every netfilter request
/// needs (EPERM).
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_look_the_kernel_refuses_answers_that_the_bridge_may_have_isolation() {
    let ns = netns("isorefused");
    ns.run(|_| {
        assert!(!firewall::may_isolate(BRIDGE), "an empty node, seen");
        drop_net_admin()?;
        let refused = cni_netfilter::nft::NftBackend::open().and_then(|mut nft| {
            nft.has_chain(
                &cni_netfilter::Table::new(cni_netfilter::Family::Inet, "filter"),
                "x",
            )
        });
        assert!(refused.is_err(), "the look itself is refused: {refused:?}");
        assert!(firewall::may_isolate(BRIDGE), "refused: it cannot tell");
        Ok::<_, BoxError>(())
    })
    .unwrap();
}

/// Drops `CAP_NET_ADMIN` from the calling thread's effective set (the
/// thread ends with the test's closure; the process keeps its own).
fn drop_net_admin() -> std::io::Result<()> {
    use nix::libc;
    const CAP_NET_ADMIN: u32 = 12;
    // `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header {
        version: 0x2008_0522,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget and capset read and write the two structures given,
    // laid out as <linux/capability.h> has them, for the calling thread.
    #[allow(unsafe_code)]
    let got = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if got != 0 {
        return Err(std::io::Error::last_os_error());
    }
    data[0].effective &= !(1 << CAP_NET_ADMIN);
    #[allow(unsafe_code)]
    let set = unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) };
    if set != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
