//! CHECK: compare a result with the live namespace, naming the first
//! difference.

use cni_types::{IpNetwork, Result100, Route};

use crate::{Link, Mac, NetError, Netlink, MAIN_TABLE};

/// CHECK's answer when the live namespace differs from what ADD made:
/// code 999 with `what` as the message, as the reference words its
/// differences (`fmt.Errorf`); every plugin's CHECK reports one this way.
///
/// ```
/// let err = cni_net::differs("Error: Container interface eth0 not of type veth/p2p");
/// assert_eq!((err.code.0, err.details.as_str()), (999, ""));
/// ```
pub fn differs(what: impl Into<String>) -> cni_types::Error {
    cni_types::Error::from(NetError::Differs(what.into()))
}

/// Checks the interface `ifname` of `result` against the namespace: the
/// result lists it (with `sandbox`, when not empty), the link exists, has
/// the result's MAC and MTU (when the result gives them) and carries the
/// result's addresses for it; then the result's routes, as
/// [`check_routes`]. Returns the link.
///
/// The first difference is [`NetError::Differs`] naming it: `address
/// 10.1.0.2/24 is missing from "eth0"`, `"eth0" has MTU 1400, the result
/// says 1450`.
///
/// ```no_run
/// use cni_net::{check_interface, NetError, Netns};
/// # fn prev_result() -> cni_types::Result100 { unimplemented!() }
///
/// let prev = prev_result(); // the prevResult CHECK received
/// let netns = Netns::open("/run/netns/blue")?;
/// let sandbox = netns.path().display().to_string();
/// let mut nl = netns.socket()?;
/// if let Err(difference) = check_interface(&mut nl, &prev, "eth0", &sandbox) {
///     eprintln!("{difference}"); // address 10.1.0.2/24 is missing from "eth0"
/// }
/// # Ok::<(), NetError>(())
/// ```
///
/// Go: `ip.ValidateExpectedInterfaceIPs` and `ip.ValidateExpectedRoute`
/// (plugins `pkg/ip`), plus the MAC comparison the reference plugins each
/// write for themselves.
pub fn check_interface(
    netlink: &mut Netlink,
    result: &Result100,
    ifname: &str,
    sandbox: &str,
) -> Result<Link, NetError> {
    let differs = |what: String| NetError::Differs(what);
    let (index, expected) = result
        .interfaces
        .iter()
        .enumerate()
        .find(|(_, i)| i.name == ifname && (sandbox.is_empty() || i.sandbox == sandbox))
        .ok_or_else(|| {
            differs(format!(
                "the result has no interface {ifname:?} in {sandbox}"
            ))
        })?;
    let link = netlink
        .find_link(ifname)?
        .ok_or_else(|| differs(format!("interface {ifname:?} is missing")))?;
    if !expected.mac.is_empty() {
        let want: Mac = expected
            .mac
            .parse()
            .map_err(|e| NetError::InvalidResult(format!("interface {ifname:?}: {e}")))?;
        if link.mac != Some(want) {
            let have = link.mac_text();
            return Err(differs(format!(
                "{ifname:?} has MAC {have}, the result says {want}"
            )));
        }
    }
    if let Some(mtu) = expected.mtu.filter(|m| *m != link.mtu) {
        return Err(differs(format!(
            "{ifname:?} has MTU {}, the result says {mtu}",
            link.mtu
        )));
    }
    let wanted: Vec<IpNetwork> = result
        .ips
        .iter()
        .filter(|ip| ip.interface == Some(index))
        .map(|ip| ip.address)
        .collect();
    check_addresses(netlink, &link, &wanted)?;
    check_routes(netlink, &result.routes)?;
    Ok(link)
}

/// Checks that `link` carries each of `addresses` (address and prefix
/// length); the first one missing is [`NetError::Differs`] naming it.
///
/// Go: `ip.ValidateExpectedInterfaceIPs`.
pub fn check_addresses(
    netlink: &mut Netlink,
    link: &Link,
    addresses: &[IpNetwork],
) -> Result<(), NetError> {
    let live = netlink.addresses(Some(link.index))?;
    match addresses
        .iter()
        .find(|want| !live.iter().any(|a| a.network == **want))
    {
        Some(missing) => Err(NetError::Differs(format!(
            "address {missing} is missing from {:?}",
            link.name
        ))),
        None => Ok(()),
    }
}

/// Checks that each of `routes` is in the namespace: a route to the same
/// network, in its table (the main one when not given), via its gateway
/// when it names one. The first one missing is [`NetError::Differs`]
/// naming it.
///
/// Go: `ip.ValidateExpectedRoute`.
pub fn check_routes(netlink: &mut Netlink, routes: &[Route]) -> Result<(), NetError> {
    let live = netlink.routes()?;
    for route in routes {
        let dst = route.dst.subnet();
        let table = route.table.unwrap_or(MAIN_TABLE);
        let found = live.iter().any(|l| {
            l.route.dst == dst
                && l.route.table == Some(table)
                && (route.gw.is_none() || l.route.gw == route.gw)
        });
        if !found {
            let via = route.gw.map(|gw| format!(" via {gw}")).unwrap_or_default();
            return Err(NetError::Differs(format!(
                "route to {}{via} is missing",
                route.dst
            )));
        }
    }
    Ok(())
}
