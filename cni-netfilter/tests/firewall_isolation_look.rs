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
