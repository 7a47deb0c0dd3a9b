//! A chained plugin that sets the MTU and MAC of `CNI_IFNAME` inside the
//! container's namespace and returns `prevResult` saying so:
//! `{"type": "tune", "mtu": 1400, "mac": "02:00:00:00:00:07"}`.

use cni_net::Netns;
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Error, Mac, NetConf};

/// The plugin's own configuration keys.
#[derive(serde::Deserialize)]
pub struct Tuning {
    /// The MTU for the interface.
    pub mtu: u32,
    /// The MAC for the interface; a malformed one fails before anything changes.
    pub mac: Mac,
}

/// The plugin.
pub struct Tune;

impl Plugin for Tune {
    type Config = NetConf<Tuning>;
    const CHECK: CheckSupport = CheckSupport::Unsupported;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        // Code 7, "prevResult required", when not chained.
        let mut result = req.prev_result()?.into_owned();
        set_mtu_and_mac(req)?;
        if let Some(iface) = result.interface_mut(&req.ifname) {
            iface.mac = req.config.plugin.mac.to_string();
            iface.mtu = Some(req.config.plugin.mtu);
        }
        Ok(result.into())
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
}

/// Changes `CNI_IFNAME` inside `CNI_NETNS`. The closure runs on a thread
/// of its own that joins the namespace, so no thread of ours moves, and it
/// may use `req`. `?` turns a `NetError` into a CNI error with its code
/// (8 for a bad namespace, 999 for a kernel refusal).
pub fn set_mtu_and_mac(req: &Request<NetConf<Tuning>>) -> Result<(), Error> {
    // ADD always has CNI_NETNS: the SDK refuses the call before `add` otherwise.
    let netns = Netns::open(req.netns.clone().unwrap_or_default())?;
    netns.run(|nl| {
        let link = nl.link(&req.ifname)?;
        nl.set_mtu(link.index, req.config.plugin.mtu)?;
        Ok(nl.set_mac(link.index, req.config.plugin.mac)?)
    })
}

fn main() {
    cni_skel::run(
        &Tune,
        &cni_version::PluginInfo::all(),
        "CNI tune plugin v1.0.0",
    );
}
