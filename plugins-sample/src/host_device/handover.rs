//! Handing a device to a container and back, through an unnamed staging
//! namespace where it is renamed, so no daemon of either namespace sees a
//! transient name. Each step that fails is undone, in reverse order.

use cni_net::{Link, NetError, Netlink, Netns};
use cni_types::{Code, Error};

/// Moves `device` from `host` into `container` as `ifname`, up, with its
/// original name kept as its alias; returns it as the container sees it.
/// On failure the device is back in `host` as it was (name, alias, up).
///
/// Go: `moveLinkIn`.
pub(super) fn move_in(
    host: &mut Netlink,
    device: &Link,
    container: &Netns,
    ifname: &str,
) -> Result<Link, Error> {
    // Everything that can fail without changing anything comes first.
    let home = Netns::current()?;
    let staging = Netns::unnamed()?;
    let mut staged = staging.socket()?;
    let mut inside = container.socket()?;
    let alias = host.alias(device.index)?.unwrap_or_default();
    host.move_to_netns(device.index, &staging)?;
    match hand_over(&mut staged, &mut inside, container, &device.name, ifname) {
        Ok(link) => Ok(link),
        Err(e) => {
            // Undo what was done, from wherever the device got to.
            if let Ok(Some(link)) = inside.find_link(ifname) {
                if inside.alias(link.index).ok().flatten().as_deref() == Some(&device.name) {
                    let _ = inside.move_to_netns(link.index, &staging);
                }
            }
            let _ = restore(
                &mut staged,
                &home,
                &[ifname, &device.name],
                &device.name,
                &alias,
            );
            if device.up {
                if let Ok(Some(link)) = host.find_link(&device.name) {
                    let _ = host.set_up(link.index);
                }
            }
            Err(e.into())
        }
    }
}

/// The steps of [`move_in`] after the device reached the staging
/// namespace.
fn hand_over(
    staged: &mut Netlink,
    inside: &mut Netlink,
    container: &Netns,
    name: &str,
    ifname: &str,
) -> Result<Link, NetError> {
    let index = staged.link(name)?.index;
    staged.rename(index, ifname)?;
    staged.set_alias(index, name)?;
    staged.move_to_netns(index, container)?;
    let link = inside.link(ifname)?;
    inside.set_up(link.index)?;
    inside.link(link.index)
}

/// Renames the staged device (under any of `names`) to `name`, sets its
/// alias, and moves it to `to`.
fn restore(
    staged: &mut Netlink,
    to: &Netns,
    names: &[&str],
    name: &str,
    alias: &str,
) -> Result<(), NetError> {
    let link = names
        .iter()
        .find_map(|n| staged.find_link(*n).ok().flatten())
        .ok_or_else(|| NetError::NoSuchLink(name.into()))?;
    if link.name != name {
        staged.rename(link.index, name)?;
    }
    staged.set_alias(link.index, alias)?;
    staged.move_to_netns(link.index, to)
}

/// Returns the container's `ifname` to the plugin's own namespace under
/// the name its alias keeps, down (its state before is unknown), alias
/// cleared. `false` when the container has no such link (DEL already
/// done). On failure the device is back in the container as it was.
///
/// Go: `moveLinkOut`.
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
    if Netlink::open()?.find_link(&original)?.is_some() {
        return Err(Error::new(
            Code::INTERNAL,
            format!(
                "cannot return {ifname:?} to the host as {original:?}: a link of that name is there"
            ),
        ));
    }
    let staging = Netns::unnamed()?;
    let mut staged = staging.socket()?;
    inside.move_to_netns(link.index, &staging)?;
    match restore(&mut staged, &home, &[ifname], &original, "") {
        Ok(()) => Ok(true),
        Err(e) => {
            let _ = restore(
                &mut staged,
                container,
                &[&original, ifname],
                ifname,
                &original,
            );
            if link.up {
                if let Ok(Some(back)) = inside.find_link(ifname) {
                    let _ = inside.set_up(back.index);
                }
            }
            Err(e.into())
        }
    }
}
