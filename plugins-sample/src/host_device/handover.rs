//! Handing a device to a container and back. Each hand-over is one
//! netlink request that moves, renames and sets the alias at once
//! ([`Netlink::move_to_netns_as`]), so a plugin killed at any instant
//! leaves the device either where it was, under the name it had, or
//! where it was going, under the name it was to have: in the host under
//! its own name, or in the container as `CNI_IFNAME`, where the next DEL
//! finds it. A staging namespace would die with the plugin and take the
//! device with it. Each step that fails is undone, in reverse order.

use cni_net::{Link, Netlink, Netns};
use cni_types::{Code, Error};

/// Moves `device` from `host` into `container` as `ifname`, up, with its
/// original name kept as its alias; returns it as the container sees it.
/// On failure the device is back in `host` as it was (name, alias, up).
///
/// Go: `moveLinkIn`, which moves the device under its own name and then
/// renames it in the container.
pub(super) fn move_in(
    host: &mut Netlink,
    device: &Link,
    container: &Netns,
    ifname: &str,
) -> Result<Link, Error> {
    // Everything that can fail without changing anything comes first.
    let home = Netns::current()?;
    let mut inside = container.socket()?;
    let alias = host.alias(device.index)?.unwrap_or_default();
    let moved = host
        .move_to_netns_as(device.index, container, ifname, &device.name)
        .and_then(|()| {
            let link = inside.link(ifname)?;
            inside.set_up(link.index)?;
            inside.link(link.index)
        });
    match moved {
        Ok(link) => Ok(link),
        Err(e) => {
            // Undo what was done, from wherever the device got to: the
            // rename or the alias may have failed after the move.
            if host.find_link(&device.name).ok().flatten().is_none() {
                let ours = [ifname, &device.name]
                    .into_iter()
                    .find_map(|n| inside.find_link(n).ok().flatten())
                    .filter(|l| l.mac == device.mac);
                if let Some(link) = ours {
                    let _ = inside.move_to_netns_as(link.index, &home, &device.name, &alias);
                }
            }
            if device.up {
                if let Ok(Some(link)) = host.find_link(&device.name) {
                    let _ = host.set_up(link.index);
                }
            }
            Err(e.into())
        }
    }
}

/// Returns the container's `ifname` to the plugin's own namespace under
/// the name its alias keeps, down (its state before is unknown), alias
/// cleared. `false` when the container has no such link (DEL already
/// done). On failure the device is back in the container as it was.
///
/// Go: `moveLinkOut`, which renames the device in the container and then
/// moves it: a plugin killed between the two leaves it there under a
/// name no DEL looks for.
pub(super) fn move_out(container: &Netns, ifname: &str) -> Result<bool, Error> {
    let mut inside = container.socket()?;
    let Some(link) = inside.find_link(ifname)? else {
        return Ok(false);
    };
    let original = inside.alias(link.index)?.ok_or_else(|| {
        Error::new(
            Code::INTERNAL,
            format!("failed to find original ifname for {ifname:?} (alias is not set)"),
        )
    })?;
    cni_net::validate_ifname(&original).map_err(|e| {
        Error::new(
            Code::INTERNAL,
            format!("the alias of {ifname:?} is not a device name"),
        )
        .with_details(e.to_string())
    })?;
    let home = Netns::current()?;
    let mut host = Netlink::open()?;
    if host.find_link(&original)?.is_some() {
        return Err(Error::new(
            Code::INTERNAL,
            format!(
                "cannot return {ifname:?} to the host as {original:?}: a link of that name is there"
            ),
        ));
    }
    match inside.move_to_netns_as(link.index, &home, &original, "") {
        Ok(()) => Ok(true),
        Err(e) => {
            // A rename refused after the move (a link named `original`
            // appeared meanwhile) leaves the device here as `ifname`.
            let stray = host.find_link(ifname).ok().flatten();
            if let Some(back) = stray.filter(|l| l.mac == link.mac) {
                let _ = host.move_to_netns_as(back.index, container, ifname, &original);
            }
            if link.up {
                if let Ok(Some(back)) = inside.find_link(ifname) {
                    let _ = inside.set_up(back.index);
                }
            }
            Err(e.into())
        }
    }
}
