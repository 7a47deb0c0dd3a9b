//! The link's settings: set on ADD, put back on DEL, compared on CHECK.

use cni_net::{Link, NetError, Netlink};
use cni_types::{Code, Error};

use super::backup::Backup;
use super::config::Wanted;

/// Sets what `wanted` asks on `link`, in the reference's order: MAC,
/// promiscuous mode, MTU, all-multicast mode.
pub(super) fn apply(nl: &mut Netlink, link: &Link, wanted: &Wanted) -> Result<(), NetError> {
    if let Some(mac) = wanted.mac {
        nl.set_mac(link.index, mac)?;
    }
    if wanted.promisc {
        nl.set_promisc(link.index, true)?;
    }
    if let Some(mtu) = wanted.mtu {
        nl.set_mtu(link.index, mtu)?;
    }
    if let Some(on) = wanted.allmulti {
        nl.set_allmulti(link.index, on)?;
    }
    Ok(())
}

/// Puts the saved values back, in the reference's order (MTU, MAC,
/// promiscuous, all-multicast), trying each even when one fails; the
/// error lists every failure (joined by " | ", since each holds "; "),
/// as the reference's does.
pub(super) fn restore(nl: &mut Netlink, link: &Link, saved: &Backup) -> Result<(), Error> {
    let mut failed = Vec::new();
    let mut attempt = |what: &str, done: Result<(), NetError>| {
        if let Err(e) = done {
            failed.push(format!("failed to restore {what}: {}", Error::from(e)));
        }
    };
    if saved.mtu != 0 {
        attempt("MTU", nl.set_mtu(link.index, saved.mtu));
    }
    if let Some(mac) = saved.mac {
        attempt("MAC address", nl.set_mac(link.index, mac));
    }
    if let Some(on) = saved.promisc {
        attempt("promiscuous mode", nl.set_promisc(link.index, on));
    }
    if let Some(on) = saved.allmulti {
        attempt("all-multicast mode", nl.set_allmulti(link.index, on));
    }
    if failed.is_empty() {
        return Ok(());
    }
    Err(
        Error::new(Code::INTERNAL, "failed to restore the interface")
            .with_details(failed.join(" | ")),
    )
}

/// CHECK: the first setting of `wanted` that `link` does not have, named
/// with the configured and the current value (code 999, as the
/// reference's untyped error).
pub(super) fn compare(link: &Link, wanted: &Wanted) -> Result<(), Error> {
    let ifname = &link.name;
    let differs = |what: String| Err(cni_net::differs(what));
    if let Some(mac) = wanted.mac.filter(|m| link.mac != Some(*m)) {
        let live = link.mac_text();
        return differs(format!(
            "tuning configured MAC of {ifname} is {mac}, current value is {live}"
        ));
    }
    if link.promisc != wanted.promisc {
        return differs(format!(
            "tuning configured promiscuous mode of {ifname} is {}, current value is {}",
            wanted.promisc, link.promisc
        ));
    }
    if let Some(mtu) = wanted.mtu.filter(|m| *m != link.mtu) {
        return differs(format!(
            "tuning configured MTU of {ifname} is {mtu}, current value is {}",
            link.mtu
        ));
    }
    if let Some(on) = wanted.allmulti.filter(|on| *on != link.allmulti) {
        return differs(format!(
            "tuning configured all-multicast mode of {ifname} is {on}, current value is {}",
            link.allmulti
        ));
    }
    Ok(())
}
