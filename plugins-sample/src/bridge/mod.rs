//! `bridge`: connects a container to a host bridge with a veth pair, a
//! drop-in replacement for the reference `bridge` plugin.
//!
//! ADD creates the bridge when it is missing (`bridge`, default `cni0`,
//! with `mtu` and `promiscMode`), a veth pair whose container end is
//! `CNI_IFNAME` in `CNI_NETNS` (MTU `mtu`, the MAC [`requested_mac`] finds)
//! and whose host end is a port of the bridge (`hairpinMode`), runs the
//! `ipam.type` plugin, configures the container end with its addresses and
//! routes, and with `isGateway` puts each subnet's gateway on the bridge
//! (`forceAddress` replaces another IPv4 address there) and enables
//! forwarding; `isDefaultGateway` adds a default route through it. The
//! result is the reference's: bridge, host end, container end, `ips` on
//! interface 2 with their gateway. Without `ipam` the port is plain layer 2.
//!
//! With IPAM, `ipMasq` masquerades the container's traffic to outside its
//! subnets ([`cni_netfilter::masquerade`], under `ipMasqBackend` or the
//! reference's default backend).
//!
//! Layer 2: `vlan` makes the port a member of that VLAN (native: untagged
//! in and out) and `vlanTrunk` (`[{"id": 5}, {"minID": 10, "maxID": 20}]`)
//! adds VLANs it carries tagged (native VLAN 1 unless `vlan` names one);
//! either turns on the bridge's VLAN filtering and removes the port's
//! default VLAN 1 unless `preserveDefaultVlan`. `portIsolation` isolates
//! the port (isolated ports reach the non-isolated ones, never each
//! other); with `isGateway` and `vlan`, the gateway goes on a veth
//! `BRIDGE.VLAN` that is a port of the VLAN (listed fourth in the result,
//! shared by the VLAN's containers and left by DEL, as the reference); `macspoofchk` drops frames from the container with another
//! source MAC than its interface's ([`cni_netfilter::macspoof`], table
//! `bridge nat` as the reference); `disableContainerInterface` leaves the
//! container end down (no IPAM then, code 7); `enabledad` turns IPv6
//! duplicate address detection on in the container (`accept_dad`,
//! `enhanced_dad`).
//!
//! DEL deletes the container end, releases the IPAM reservation and
//! removes the masquerading and the spoof check; a namespace or link
//! already gone is success. The first three run at once (the kernel takes
//! tens of milliseconds to delete a pair). ADD runs the IPAM plugin, then
//! the masquerading of its addresses, while it makes the bridge, the pair
//! and the port, then enters the container once for its sysctls,
//! addresses and routes; whichever step fails, the others are undone. DEL's
//! masquerading teardown takes the previous result's addresses (the
//! reference takes the deleted link's; the rules are found by comment
//! either way). CHECK compares the bridge, the port and the
//! container end with `prevResult`, with `ipMasq` the masquerading rules,
//! and each layer-2 field above with the kernel. GC and STATUS go to
//! IPAM; GC also removes the masquerading of attachments
//! `cni.dev/valid-attachments` does not list.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "pods", "type": "bridge", "bridge": "cni0",
//!  "isGateway": true, "ipam": {"type": "ipam-file",
//!  "ranges": [[{"subnet": "10.22.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}}
//! ```
//!
//! Where we deliberately differ: the host end's name is derived from the
//! container id and interface name ([`cni_net::host_veth_names`], the
//! next one when another attachment holds it) rather than random, so a
//! test or an operator can find it; DEL and CHECK find it from the
//! container's side as the reference does. Configuration errors are code
//! 7 before anything changes on the host; `"mtu": 0` is unset, as the
//! reference reads it. A failed ADD removes the pair at once (the
//! reference leaves it on the bridge until DEL). `isGateway` refuses
//! (code 7, naming the link) a subnet that another host link already
//! holds, where the reference puts the gateway on the bridge anyway and
//! the host's route to the subnet leaves by the other link. DEL removes
//! the masquerading even when the namespace is gone (the reference
//! leaves the rules then); CHECK verifies it and GC collects it (the
//! reference does neither). CHECK also verifies the layer-2 fields,
//! which the reference's does not. `vlan` on an existing bridge turns its
//! VLAN filtering on (the reference sets it only on a bridge it creates,
//! so the VLAN would isolate nothing); the port's VLANs go in one request,
//! a trunk as ranges (the reference sends one per VLAN). A kernel without bridge VLAN filtering
//! (this project's CI kernel) fails `vlan` and `vlanTrunk` before a new
//! bridge exists, saying so.
//!
//! Go: containernetworking/plugins `plugins/main/bridge`.

use cni_invoke::FirstError;
use cni_net::{link_plugin, Netlink, Netns};
use cni_netfilter::macspoof;
use cni_netfilter::masquerade::{self, Attachment};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request, Teardown, Undo};
use cni_types::conventions::{requested_mac, MacPrecedence};
use cni_types::{CniResult, Error, NetConf, Result100};

mod check;
mod config;
mod setup;
mod vlans;

use self::config::{plan, Plan};
pub use self::config::{Fields, VlanTrunk};
use self::setup::{make_port, ref_id};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI bridge sample plugin v0.1.0";

/// The reference's default bridge name.
pub const DEFAULT_BRIDGE: &str = "cni0";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Bridge;

type Req<'a> = Request<'a, NetConf<Fields>>;

impl Plugin for Bridge {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let plan = plan(req)?;
        let mac = requested_mac(&req.config, &req.args, None, MacPrecedence::Interface)?;
        let mac = mac.map(|m| m.mac);
        let netns = Netns::of(req)?;
        // The container's side is one thread, once its addresses are
        // known (`Port::layer3`): nothing enters the namespace before.
        let host = Netlink::open()?;
        Undo::scope(|undo| {
            let Some(ipam) = &plan.ipam else {
                let mut port = make_port(req, &plan, &netns, mac, host, undo)?;
                let result = port.layer2()?;
                return Ok(port.describe(result)?.into());
            };
            // The IPAM plugin and then the masquerading of its addresses
            // run while the bridge, the pair and the port are made: in a
            // burst each pod's wait for IPAM's lock overlaps its own link
            // work (one after the other, the pods queued on that lock:
            // ADD p99/p50 1.10 -> 1.35 at 100 pods). A repeated ADD finds
            // both refused (the name taken, the attachment held) and
            // undoes nothing of the live pod; the pair's error is the
            // reference's.
            let (mut port, result) = cni_invoke::add_alongside_then(
                ipam,
                req,
                undo,
                FirstError::Link,
                |undo| make_port(req, &plan, &netns, mac, host, undo),
                |result, undo| masquerade(req, &plan, result, undo),
            )?;
            let result = port.layer3(result)?;
            Ok(port.describe(result)?.into())
        })
    }

    /// DEL needs only the namespace, `ipam.type`, `ipMasq` and
    /// `macspoofchk`: a configuration that ADD would refuse (a bad VLAN,
    /// hairpin with promisc) still lets the runtime clean up.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        // The pair's deletion (tens of milliseconds in the kernel) runs
        // while the IPAM DEL and the masquerading teardown do: each goes
        // whatever became of the others. A namespace that is gone took the
        // pair with it; the rules are found by comment.
        let ipam = req.config.ipam_plugin();
        let mut teardown = Teardown::new();
        let remove = || link_plugin::remove_link(req);
        teardown.alongside("removing the interface", remove, |here| {
            if let Some(ipam) = ipam {
                here.keep(
                    "releasing the addresses",
                    cni_invoke::delegate_del(ipam, req),
                );
                if req.config.plugin.ip_masq {
                    let addresses = masquerade::prev_addresses(req);
                    let removing = masquerade::teardown(&addresses, &Attachment::of(req));
                    here.keep("removing the masquerading", removing.map_err(Error::from));
                }
            }
        });
        if req.config.plugin.macspoofchk {
            let removing = macspoof::teardown(&ref_id(req)).map_err(Error::from);
            teardown.keep("removing the MAC spoof check", removing);
        }
        teardown.finish()
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let plan = plan(req)?;
        let netns = Netns::of(req)?;
        if let Some(ipam) = &plan.ipam {
            cni_invoke::delegate_check(ipam, req)?;
        }
        let prev = req.prev_result_or("Required prevResult missing")?;
        check::check(req, &plan, &netns, &prev)?;
        if let Some(backend) = plan.masquerade {
            masquerade::check(backend, &prev.addresses(), &Attachment::of(req))
                .map_err(Error::from)?;
        }
        Ok(())
    }

    fn gc(&self, req: &Req) -> Result<(), BoxError> {
        let plan = plan(req)?;
        if let Some(ipam) = plan.ipam {
            cni_invoke::delegate_gc(&ipam, req)?;
        }
        if plan.masquerade.is_some() {
            let valid = req.valid_attachments()?;
            masquerade::gc(&req.config.name, &valid).map_err(Error::from)?;
        }
        Ok(())
    }

    fn status(&self, req: &Req) -> Result<(), BoxError> {
        if let Some(ipam) = plan(req)?.ipam {
            cni_invoke::delegate_status(&ipam, req)?;
        }
        Ok(())
    }
}

/// IPAM's side of ADD once its result is there: with `ipMasq`, the
/// masquerading of its addresses (it needs nothing else), its teardown
/// pushed first so a setup that fails half way is undone too.
fn masquerade<'a>(
    req: &'a Req,
    plan: &Plan,
    result: CniResult,
    undo: &mut Undo<'a>,
) -> Result<Result100, BoxError> {
    let result = result.to_current()?;
    if let Some(backend) = plan.masquerade {
        let addresses = result.addresses();
        let undone = addresses.clone();
        undo.push("removing the masquerading", move || {
            Ok(masquerade::teardown(&undone, &Attachment::of(req))?)
        });
        masquerade::setup(backend, &addresses, &Attachment::of(req)).map_err(Error::from)?;
    }
    Ok(result)
}

#[cfg(test)]
mod tests;
