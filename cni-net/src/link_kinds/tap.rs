//! Tap devices, made with the TUN ioctls on `/dev/net/tun`: the only way
//! the kernel makes one (rtnetlink can list a tap but not create it).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;

use nix::libc::c_int;

use crate::ifreq::IfReq;
use crate::{validate_ifname, Link, NetError, Netns, Op};

/// A tap device to create, for [`Netns::add_tap`].
///
/// Go: `netlink.Tuntap` in `TUNTAP_MODE_TAP`, or `ip tuntap add mode tap`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tap<'a> {
    /// The device's name.
    pub name: &'a str,
    /// Several queues (`IFF_MULTI_QUEUE`, `ip tuntap ... multi_queue`), so
    /// a VMM can attach one file per vCPU.
    pub multi_queue: bool,
    /// Frames carry a virtio-net header (`IFF_VNET_HDR`, `vnet_hdr`).
    pub vnet_hdr: bool,
    /// Frames carry the 4-byte packet information prefix (no
    /// `IFF_NO_PI`, `ip tuntap ... pi`).
    pub packet_info: bool,
    /// The user allowed to attach to it besides root (`TUNSETOWNER`,
    /// `user UID`); anyone with `CAP_NET_ADMIN` when `None`.
    pub owner: Option<u32>,
    /// The group allowed to attach to it (`TUNSETGROUP`, `group GID`).
    pub group: Option<u32>,
}

// From <linux/if_tun.h>.
const IFF_TAP: i16 = 0x0002;
const IFF_MULTI_QUEUE: i16 = 0x0100;
const IFF_NO_PI: i16 = 0x1000;
const IFF_VNET_HDR: i16 = 0x4000;
/// Refuse (`EBUSY`) rather than attach to an existing device of the name.
const IFF_TUN_EXCL: i16 = -0x8000;

const INT: usize = std::mem::size_of::<c_int>();
nix::ioctl_write_ptr_bad!(tun_set_iff, nix::request_code_write!(b'T', 202, INT), IfReq);
nix::ioctl_write_int_bad!(tun_set_persist, nix::request_code_write!(b'T', 203, INT));
nix::ioctl_write_int_bad!(tun_set_owner, nix::request_code_write!(b'T', 204, INT));
nix::ioctl_write_int_bad!(tun_set_group, nix::request_code_write!(b'T', 206, INT));

impl Tap<'_> {
    fn flags(&self) -> i16 {
        let mut flags = IFF_TAP | IFF_TUN_EXCL;
        if self.multi_queue {
            flags |= IFF_MULTI_QUEUE;
        }
        if self.vnet_hdr {
            flags |= IFF_VNET_HDR;
        }
        if !self.packet_info {
            flags |= IFF_NO_PI;
        }
        flags
    }

    /// Creates the device in the calling thread's namespace and makes it
    /// persist once the file is closed; closing the file before
    /// `TUNSETPERSIST` removes a half-made device.
    fn create_here(&self) -> io::Result<()> {
        let file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun")?;
        let fd = file.as_raw_fd();
        // TUNSETIFF reads the flags from the union's first two bytes.
        let mut req = IfReq::named(self.name);
        req.union[..2].copy_from_slice(&self.flags().to_ne_bytes());
        // SAFETY: `req` is a live `struct ifreq` of the kernel's size, and
        // the other calls pass plain integers.
        #[allow(unsafe_code)]
        unsafe {
            tun_set_iff(fd, &req).map_err(|e| match e {
                // Another device has the name: the usual "exists".
                nix::errno::Errno::EBUSY => io::Error::from_raw_os_error(nix::libc::EEXIST),
                e => e.into(),
            })?;
            if let Some(uid) = self.owner {
                tun_set_owner(fd, uid as c_int)?;
            }
            if let Some(gid) = self.group {
                tun_set_group(fd, gid as c_int)?;
            }
            tun_set_persist(fd, 1)?;
        }
        Ok(())
    }
}

impl Netns {
    /// Creates a persistent tap device in this namespace, down, and
    /// returns it. A name taken is `EEXIST` (never an attach to the
    /// existing device); a kernel without tun/tap is
    /// [`NetError::NoKernelSupport`].
    ///
    /// Like `ip -n NS tuntap add mode tap name NAME [multi_queue]
    /// [vnet_hdr] [pi] [user UID] [group GID]`; Go: `netlink.LinkAdd(&netlink.Tuntap{..})`.
    pub fn add_tap(&self, tap: &Tap) -> Result<Link, NetError> {
        validate_ifname(tap.name)?;
        let object = format!("tap {:?}", tap.name);
        self.run(|nl| {
            tap.create_here().map_err(|source| {
                let missing = [nix::libc::ENOENT, nix::libc::ENODEV];
                if missing.contains(&source.raw_os_error().unwrap_or(0)) {
                    NetError::NoKernelSupport {
                        feature: "tun/tap (/dev/net/tun)",
                        op: Op::CreateTap,
                        object: object.clone(),
                        source,
                    }
                } else {
                    NetError::kernel(Op::CreateTap, &object)(source)
                }
            })?;
            nl.link(tap.name)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_tap_has_no_packet_information_and_never_attaches() {
        let plain = Tap::default().flags();
        assert_eq!(plain, IFF_TAP | IFF_NO_PI | IFF_TUN_EXCL);
        let all = Tap {
            multi_queue: true,
            vnet_hdr: true,
            packet_info: true,
            ..Tap::default()
        };
        assert_eq!(
            all.flags(),
            IFF_TAP | IFF_MULTI_QUEUE | IFF_VNET_HDR | IFF_TUN_EXCL
        );
    }
}
