//! Masquerading of a container's outbound traffic (`ipMasq` of the
//! reference `bridge` and `ptp`), laid out as the reference lays it out,
//! under either backend.
//!
//! - iptables (`iptables.rs`): in the `nat` table, a chain
//!   [`chain_name`] per network and container holding, for each address,
//!   `-d SUBNET -j ACCEPT` and `! -d MULTICAST -j MASQUERADE`, and in
//!   `POSTROUTING` a jump `-s ADDRESS -j CHAIN`, all with the comment
//!   [`iptables_comment`].
//! - nftables (`nftables.rs`): the table `inet cni_plugins_masquerade`,
//!   whose `postrouting` chain returns multicast and goes to `masq_checks`,
//!   where each attachment has per address `ip saddr ADDRESS ip daddr !=
//!   SUBNET masquerade` with the comment [`nft_comment`]: hashes of the
//!   network and of the attachment, then a readable tail.
//!
//! [`setup`] uses one backend (asked for, or [`choose`]'s);
//! [`teardown`] and [`gc`] clean both, as the reference does, since the
//! rules may come from another version or configuration.
//!
//! ```no_run
//! use cni_netfilter::masquerade::{self, Attachment};
//!
//! let at = Attachment { network: "pods", ifname: "eth0", container_id: "c1" };
//! let addresses = ["10.22.0.5/24".parse()?];
//! masquerade::setup(None, &addresses, &at)?;
//! masquerade::teardown(&addresses, &at)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Go: plugins `pkg/ip/ipmasq_linux.go`, `ipmasq_iptables_linux.go`,
//! `ipmasq_nftables_linux.go`.
//!
//! # Where we deliberately differ
//! - iptables teardown finds POSTROUTING's jumps by their comment, so it
//!   needs no addresses: a DEL whose namespace is gone still removes the
//!   rules (the reference skips teardown then, and they stay); without
//!   addresses it cleans both families.
//! - [`check`] exists: CHECK can verify the rules (the reference's CHECK
//!   does not look at them).
//! - A comment cut to 128 bytes is cut at a character boundary.
//! - nftables: the handles of an attachment's rules are recorded
//!   ([`crate::nft::OwnedRules`], group `masquerade:NETWORK`), and its
//!   DEL and a repeated ADD delete them by handle; the reference dumps
//!   `masq_checks`, every pod's rules, each time. Without a record (the
//!   reference's rules, a killed ADD's) they are found by comment, as the
//!   reference finds them.
//! - [`gc`] collects the iptables layout too, from its comments, which
//!   name network and container; the reference collects only nftables
//!   rules, so a pod masqueraded under iptables whose DEL never came
//!   kept its chain for ever.

mod iptables;
pub(crate) mod names;
pub(crate) mod nftables;

use cni_skel::Request;
use cni_types::{Error, IpNetwork, NetConf, ValidAttachments};

pub use names::{chain_name, iptables_comment, nft_comment};
pub use nftables::{table as nft_table, CHECKS as NFT_CHECKS_CHAIN, TABLE as NFT_TABLE};

use crate::{choose, iptables_first, iptables_usable, nftables_usable, BackendKind, FilterError};

/// The attachment whose traffic is masqueraded: what names its rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attachment<'a> {
    /// The network's `name`.
    pub network: &'a str,
    /// `CNI_IFNAME` (the nftables comment has it; the iptables names,
    /// as the reference's, do not).
    pub ifname: &'a str,
    /// `CNI_CONTAINERID`.
    pub container_id: &'a str,
}

impl<'a> Attachment<'a> {
    /// The attachment a request is about: its network's `name`,
    /// `CNI_IFNAME`, `CNI_CONTAINERID`.
    pub fn of<T>(req: &'a Request<'_, NetConf<T>>) -> Attachment<'a> {
        Attachment {
            network: &req.config.name,
            ifname: &req.ifname,
            container_id: &req.container_id,
        }
    }
}

/// What DEL's teardown is given: the previous result's addresses when the
/// runtime sent one (the iptables teardown then keeps to their families),
/// else none (both families; the rules are found by their comment either
/// way). Taken from the request rather than from the link being deleted,
/// so the teardown can run while the kernel deletes the link (tens of
/// milliseconds) instead of after it.
pub fn prev_addresses<T>(req: &Request<'_, NetConf<T>>) -> Vec<IpNetwork> {
    req.config
        .prev_result
        .as_ref()
        .and_then(|prev| prev.to_current().ok())
        .map(|prev| prev.addresses())
        .unwrap_or_default()
}

/// Reads a plugin's `ipMasqBackend`: `None` when absent (the default),
/// else the backend; anything but `"iptables"` and `"nftables"` is code 7
/// naming the field, before anything changes.
///
/// Go: plugins `ip.SetupIPMasqForNetworks` ("unknown ipmasq backend"),
/// which refuses it only once the container is set up.
pub fn requested_backend(ip_masq_backend: Option<&str>) -> Result<Option<BackendKind>, Error> {
    ip_masq_backend
        .map(|b| {
            b.parse::<BackendKind>().map_err(|_| {
                Error::invalid_config(
                    "ipMasqBackend",
                    format!("{b:?}: must be \"iptables\" or \"nftables\""),
                )
            })
        })
        .transpose()
}

/// Masquerades traffic from each of `addresses` (the container's, with
/// their prefix) to anywhere outside its subnet but multicast, under
/// `backend`, or the reference's default ([`choose`]). Repeating it for
/// the same attachment changes nothing more. With no `backend`, iptables
/// is tried before the host is probed ([`iptables_first`]): an ADD starts
/// no `iptables -S INPUT 1` where iptables works.
///
/// Go: plugins `ip.SetupIPMasqForNetworks`.
pub fn setup(
    backend: Option<BackendKind>,
    addresses: &[IpNetwork],
    at: &Attachment,
) -> Result<(), FilterError> {
    iptables_first(
        backend,
        || iptables::setup(addresses, at),
        || nftables::setup(addresses, at),
    )
}

/// Removes the attachment's masquerading under both backends; a backend
/// the host cannot use is skipped, and errors of one that it can use are
/// all reported.
///
/// Go: plugins `ip.TeardownIPMasqForNetworks`.
pub fn teardown(addresses: &[IpNetwork], at: &Attachment) -> Result<(), FilterError> {
    both(
        || iptables::teardown(addresses, at),
        || nftables::teardown(at),
    )
}

/// Fails naming the first rule of the attachment's masquerading that is
/// missing under `backend` (or [`choose`]'s).
pub fn check(
    backend: Option<BackendKind>,
    addresses: &[IpNetwork],
    at: &Attachment,
) -> Result<(), FilterError> {
    match choose(backend) {
        BackendKind::Iptables => iptables::check(addresses, at),
        BackendKind::Nftables => nftables::check(addresses, at),
    }
}

/// Removes the masquerading of `network`'s attachments that `valid` does
/// not keep under both backends: nothing when the runtime sent no list.
/// The nftables comment names network, interface and container; the
/// iptables one (`name: "NET" id: "ID"`) network and container, so there
/// a container is kept while any of its attachments is listed. A backend
/// the host cannot use is skipped.
///
/// Go: plugins `ip.GCIPMasqForNetwork`, which collects nftables rules
/// only.
pub fn gc(network: &str, valid: &ValidAttachments) -> Result<(), FilterError> {
    both(
        || iptables::gc(network, valid),
        || nftables::gc(network, valid),
    )
}

/// Runs both teardowns; an error counts only when its backend is usable
/// on this host.
pub(crate) fn both(
    iptables: impl FnOnce() -> Result<(), FilterError>,
    nftables: impl FnOnce() -> Result<(), FilterError>,
) -> Result<(), FilterError> {
    let ipt = iptables().err().filter(|_| iptables_usable());
    let nft = nftables().err().filter(|_| nftables_usable());
    match (ipt, nft) {
        (None, None) => Ok(()),
        (Some(e), None) | (None, Some(e)) => Err(e),
        (Some(a), Some(b)) => Err(FilterError::Both {
            iptables: Box::new(a),
            nftables: Box::new(b),
        }),
    }
}
