//! Moving a link into another network namespace, and the unnamed
//! namespace a plugin stages such a move in.

use std::os::fd::{AsFd, AsRawFd};

use netlink_packet_route::link::LinkAttribute;
use netlink_packet_route::RouteNetlinkMessage;
use nix::sched::{unshare, CloneFlags};

use crate::alias::MAX_ALIAS_LEN;
use crate::link::link_message;
use crate::{validate_ifname, NetError, Netlink, Netns, Op};

impl Netlink {
    /// Moves link `index` of this socket's namespace into `netns`. The
    /// link arrives down, under the same name, with a new index, and
    /// without its addresses; a name already taken there is `EEXIST`, and
    /// a link bound to its namespace (`lo`, a vrf) `EINVAL`.
    ///
    /// Like `ip link set DEV netns NS`; Go: `netlink.LinkSetNsFd`.
    pub fn move_to_netns(&mut self, index: u32, netns: &Netns) -> Result<(), NetError> {
        let object = format!(
            "{} to network namespace {}",
            self.label(index),
            netns.path().display()
        );
        let mut msg = link_message(index);
        msg.attributes
            .push(LinkAttribute::NetNsFd(netns.as_fd().as_raw_fd()));
        self.change(RouteNetlinkMessage::SetLink(msg), 0)
            .map_err(NetError::kernel(Op::MoveToNetns, object))
    }

    /// Moves link `index` of this socket's namespace into `netns`, named
    /// `name` and with alias `alias` there (an empty one clears it), in
    /// one request. The kernel moves, renames and sets the alias under
    /// one lock in one system call, so no death of the caller splits
    /// them: the link is either here as it was or there as asked. Nobody
    /// in this namespace sees the new name; the target's listeners may
    /// see the old one for an instant.
    ///
    /// Only a failure of the rename (`name` taken in `netns`) or of the
    /// alias leaves the link moved as it was named (or already as
    /// `name` when its own name was taken there): that is returned as
    /// the error, and the caller, alive, moves it back.
    ///
    /// Like `ip link set DEV netns NS name NAME alias ALIAS`; the kernel's
    /// `do_setlink` applies the namespace before the name. Go's
    /// `host-device` renames in the container afterwards instead
    /// (`moveLinkIn`, `moveLinkOut`).
    pub fn move_to_netns_as(
        &mut self,
        index: u32,
        netns: &Netns,
        name: &str,
        alias: &str,
    ) -> Result<(), NetError> {
        validate_ifname(name)?;
        if alias.len() > MAX_ALIAS_LEN || alias.contains('\0') {
            return Err(NetError::InvalidResult(format!(
                "alias {alias:?}: longer than {MAX_ALIAS_LEN} bytes or holds a NUL"
            )));
        }
        let object = format!(
            "{} to network namespace {} as {name:?}",
            self.label(index),
            netns.path().display()
        );
        let mut msg = link_message(index);
        msg.attributes
            .push(LinkAttribute::NetNsFd(netns.as_fd().as_raw_fd()));
        msg.attributes.push(LinkAttribute::IfName(name.to_owned()));
        msg.attributes
            .push(LinkAttribute::IfAlias(alias.to_owned()));
        self.change(RouteNetlinkMessage::SetLink(msg), 0)
            .map_err(NetError::kernel(Op::MoveToNetns, object))
    }
}

impl Netns {
    /// A new, empty network namespace without a name: it lives while this
    /// handle (or a socket opened in it) is open. Closing it destroys
    /// what is left inside: virtual links are deleted and physical ones
    /// return to the initial namespace (not necessarily the caller's), so
    /// move a device out before dropping it.
    ///
    /// Where a device is renamed between two namespaces, so that no
    /// daemon watching either (udev, NetworkManager) sees a name it may
    /// act on.
    ///
    /// Go: `ns.TempNetNS` (plugins `pkg/ns`), which mounts it under
    /// `/run/netns` for a moment; an open handle is enough here.
    pub fn unnamed() -> Result<Netns, NetError> {
        let created = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    unshare(CloneFlags::CLONE_NEWNET).map_err(|e| NetError::Netns {
                        op: Op::CreateNetns,
                        path: "(unnamed)".into(),
                        source: e.into(),
                    })?;
                    // The thread's own entry, which names it in errors
                    // (`/proc/thread-self` would name whichever thread
                    // reads it later).
                    let tid = nix::unistd::gettid();
                    Netns::open(format!("/proc/self/task/{tid}/ns/net"))
                })
                .join()
        });
        created.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::TempNetns;

    use super::*;

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_moved_link_arrives_down_under_its_name_and_leaves_the_source() {
        let from = TempNetns::new("move-from").unwrap();
        let staging = Netns::unnamed().unwrap();
        assert!(!staging.is_same(&from).unwrap());
        let link = from.add_veth("dev0", "peer0", None).unwrap();
        let mut nl = from.socket().unwrap();
        nl.set_up(link.index).unwrap();
        nl.move_to_netns(link.index, &staging).unwrap();
        assert!(nl.find_link("dev0").unwrap().is_none());
        let moved = staging.run(|nl| nl.link("dev0")).unwrap();
        assert!(!moved.up);
        // Back, so the pair is deleted with `from`.
        let mut inside = staging.socket().unwrap();
        inside.move_to_netns(moved.index, &from).unwrap();
        assert!(nl.find_link("dev0").unwrap().is_some());
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_link_moved_as_a_name_arrives_renamed_with_its_alias() {
        let from = TempNetns::new("move-as-from").unwrap();
        let to = TempNetns::new("move-as-to").unwrap();
        let link = from.add_veth("dev0", "peer0", None).unwrap();
        let mut nl = from.socket().unwrap();
        nl.move_to_netns_as(link.index, &to, "net1", "dev0")
            .unwrap();
        assert!(nl.find_link("dev0").unwrap().is_none());
        let mut inside = to.socket().unwrap();
        assert!(inside.find_link("dev0").unwrap().is_none());
        assert_eq!(inside.alias("net1").unwrap().as_deref(), Some("dev0"));
        // Back under its name, alias cleared, even with "net1" taken here.
        from.add_veth("net1", "peer1", None).unwrap();
        let moved = inside.link("net1").unwrap();
        inside
            .move_to_netns_as(moved.index, &from, "dev0", "")
            .unwrap();
        assert_eq!(nl.alias("dev0").unwrap(), None);
    }

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn a_name_taken_in_the_target_is_refused_and_the_link_stays() {
        let from = TempNetns::new("move-taken").unwrap();
        let to = TempNetns::new("move-taken").unwrap();
        let link = from.add_veth("dev0", "peer0", None).unwrap();
        to.add_veth("dev0", "other0", None).unwrap();
        let mut nl = from.socket().unwrap();
        let err = nl.move_to_netns(link.index, &to).unwrap_err();
        assert!(err.is_exists(), "{err}");
        assert!(err.to_string().contains("\"dev0\""), "{err}");
        assert_eq!(nl.link("dev0").unwrap().index, link.index);
    }
}
