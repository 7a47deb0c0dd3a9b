//! What `bridge` and `ptp` share for `ipMasq`: the attachment a request
//! names and the addresses a result holds, as
//! [`cni_netfilter::masquerade`] takes them.

use cni_netfilter::masquerade::Attachment;
use cni_skel::Request;
use cni_types::{IpNetwork, NetConf, Result100};

/// The attachment whose masquerading `req` is about: its network's name,
/// `CNI_IFNAME`, `CNI_CONTAINERID`.
pub(crate) fn attachment<'a, T>(req: &'a Request<'_, NetConf<T>>) -> Attachment<'a> {
    Attachment {
        network: &req.config.name,
        ifname: &req.ifname,
        container_id: &req.container_id,
    }
}

/// The addresses of a result, with their prefix.
pub(crate) fn addresses(result: &Result100) -> Vec<IpNetwork> {
    result.ips.iter().map(|ip| ip.address).collect()
}

/// What DEL's masquerading teardown is given: the previous result's
/// addresses when the runtime sent one (the iptables teardown then keeps
/// to their families), else none (both families; the rules are found by
/// their comment either way). Taken from the request rather than from the
/// link being deleted, so the teardown can run while the kernel deletes
/// the link (tens of milliseconds) instead of after it.
pub(crate) fn del_addresses<T>(req: &Request<'_, NetConf<T>>) -> Vec<IpNetwork> {
    req.config
        .prev_result
        .as_ref()
        .and_then(|prev| prev.to_current().ok())
        .map(|prev| addresses(&prev))
        .unwrap_or_default()
}
