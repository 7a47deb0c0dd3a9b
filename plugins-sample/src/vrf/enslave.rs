//! What vrf does inside the namespace: find or create the VRF, enslave
//! the interface, keep its IPv6 addresses and move its routes.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use cni_net::{Link, LinkKind, NetError, Netlink, MAIN_TABLE};
use cni_types::{Code, Error, IpNetwork};

/// How long an IPv6 address put back may take to get its local route in
/// the VRF's table, as the reference waits (about 2.5 s over 9 tries).
const LOCAL_ROUTE_WAIT: Duration = Duration::from_millis(2560);

/// The VRF device `name`, with its table, if there is one; an error when
/// the link of that name is not a VRF.
///
/// Go: `findVRF`.
pub(super) fn find_vrf(nl: &mut Netlink, name: &str) -> Result<Option<(Link, u32)>, Error> {
    let Some(link) = nl.find_link(name)? else {
        return Ok(None);
    };
    match nl.vrf_table(link.index)? {
        Some(table) => Ok(Some((link, table))),
        None => Err(Error::invalid_config(
            "vrfname",
            format!("link {name:?} exists and is not a VRF"),
        )),
    }
}

/// The lowest table from 1 on that no VRF of the namespace uses.
///
/// Go: `findFreeRoutingTableID`.
fn free_table(nl: &mut Netlink) -> Result<u32, NetError> {
    let mut taken = Vec::new();
    for link in nl.links()? {
        if link.kind == Some(LinkKind::Other("vrf".into())) {
            taken.extend(nl.vrf_table(link.index)?);
        }
    }
    Ok((1..u32::MAX)
        .find(|t| !taken.contains(t))
        .unwrap_or(u32::MAX))
}

/// ADD inside the namespace: checks the interface and an existing VRF,
/// creates the VRF when missing (table `table`, or a free one when 0),
/// then enslaves the interface. A VRF created here is deleted again
/// when enslaving fails.
pub(super) fn add(nl: &mut Netlink, vrfname: &str, table: u32, ifname: &str) -> Result<(), Error> {
    let existing = find_vrf(nl, vrfname)?;
    if let Some((_, have)) = &existing {
        if table != 0 && *have != table {
            return Err(Error::invalid_config(
                "table",
                format!("VRF {vrfname} already exist with different routing table {have}"),
            ));
        }
    }
    let link = nl.link(ifname)?;
    if let Some(master) = link.master {
        let name = nl.find_link(master)?.map(|m| m.name).unwrap_or_default();
        return Err(Error::new(
            Code::INTERNAL,
            format!("interface {ifname} has already a master set: {name}"),
        ));
    }
    let (vrf, table, created) = match existing {
        Some((vrf, table)) => (vrf, table, false),
        None => {
            let table = if table == 0 { free_table(nl)? } else { table };
            (nl.add_vrf(vrfname, table)?, table, true)
        }
    };
    match enslave(nl, &link, &vrf, table) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = nl.set_master(link.index, None);
            if created {
                let _ = nl.delete_link(vrf.index);
            }
            Err(e.into())
        }
    }
}

/// Makes `link` a port of `vrf`: its global IPv6 addresses, which the
/// kernel drops then, are put back, and its main-table routes through a
/// gateway go to the VRF's table.
///
/// Go: `addInterface`.
fn enslave(nl: &mut Netlink, link: &Link, vrf: &Link, table: u32) -> Result<(), NetError> {
    let global_v6 = |nl: &mut Netlink| -> Result<Vec<IpNetwork>, NetError> {
        Ok(nl
            .addresses(Some(link.index))?
            .into_iter()
            .map(|a| a.network)
            .filter(|n| match n.addr() {
                IpAddr::V6(v6) => !v6.is_unicast_link_local() && !v6.is_loopback(),
                IpAddr::V4(_) => false,
            })
            .collect())
    };
    let before = global_v6(nl)?;
    let routes: Vec<_> = nl
        .table_routes(link.index, MAIN_TABLE)?
        .into_iter()
        .filter(|r| r.is_universe_scope())
        .collect();
    nl.set_master(link.index, Some(vrf.index))?;
    let after = global_v6(nl)?;
    for address in before.iter().filter(|a| !after.contains(a)) {
        // It passed duplicate address detection on this link already.
        nl.add_address(link.index, *address, cni_net::Dad::Skip)?;
        wait_for_local_route(nl, link.index, table, address.addr())?;
    }
    for route in &routes {
        nl.copy_route_to_table(route, table)?;
    }
    Ok(())
}

/// Waits until the kernel has the local route of `ip` in `table`: routes
/// through the address can be added only then.
fn wait_for_local_route(
    nl: &mut Netlink,
    oif: u32,
    table: u32,
    ip: IpAddr,
) -> Result<(), NetError> {
    let start = Instant::now();
    let mut delay = Duration::from_millis(10);
    loop {
        let routes = nl.table_routes(oif, table)?;
        if routes
            .iter()
            .any(|r| r.dst.addr() == ip && r.dst.prefix() == 128)
        {
            return Ok(());
        }
        if start.elapsed() >= LOCAL_ROUTE_WAIT {
            return Err(NetError::Timeout(format!(
                "the local route of {ip} in table {table}"
            )));
        }
        std::thread::sleep(delay);
        delay *= 2;
    }
}

/// DEL inside the namespace: the interface leaves the VRF, and the VRF
/// goes when no port is left. A VRF or interface already gone is
/// success.
pub(super) fn del(nl: &mut Netlink, vrfname: &str, ifname: &str) -> Result<(), Error> {
    let Some((vrf, _)) = find_vrf(nl, vrfname)? else {
        return Ok(());
    };
    if let Some(link) = nl.find_link(ifname)? {
        if link.master == Some(vrf.index) {
            nl.set_master(link.index, None)?;
        }
    }
    if !nl.links()?.iter().any(|l| l.master == Some(vrf.index)) {
        match nl.delete_link(vrf.index) {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

/// CHECK inside the namespace: the VRF exists and the interface is its
/// port.
pub(super) fn check(nl: &mut Netlink, vrfname: &str, ifname: &str) -> Result<(), Error> {
    let (vrf, _) = find_vrf(nl, vrfname)?
        .ok_or_else(|| Error::new(Code::INTERNAL, format!("VRF {vrfname:?} not found")))?;
    let enslaved = nl
        .find_link(ifname)?
        .is_some_and(|l| l.master == Some(vrf.index));
    if !enslaved {
        return Err(Error::new(
            Code::INTERNAL,
            format!("failed to find {ifname} associated to vrf {vrfname}"),
        ));
    }
    Ok(())
}
