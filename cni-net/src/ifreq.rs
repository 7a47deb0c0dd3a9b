//! `struct ifreq`, the request of the interface ioctls (netdevice(7)):
//! a name, then a union each ioctl reads and writes its own way (the
//! flags of `TUNSETIFF`, the `struct sockaddr` of `SIOCGIFHWADDR`).

/// `struct ifreq`: 40 bytes on every Linux ABI.
#[repr(C)]
pub(crate) struct IfReq {
    /// The interface's name, NUL-terminated.
    pub(crate) name: [u8; 16],
    /// `ifr_ifru`, as the ioctl reads or writes it.
    pub(crate) union: [u8; 24],
}

impl IfReq {
    /// A request naming `name` (checked by the caller with
    /// [`validate_ifname`](crate::validate_ifname): at most 15 bytes; a
    /// longer one is cut there rather than overflow), its union zeroed.
    pub(crate) fn named(name: &str) -> IfReq {
        let mut req = IfReq {
            name: [0; 16],
            union: [0; 24],
        };
        let len = name.len().min(15);
        req.name[..len].copy_from_slice(&name.as_bytes()[..len]);
        req
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_the_kernels_ifreq_size_and_names_with_a_nul() {
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
        let req = IfReq::named("eth0");
        assert_eq!(&req.name[..5], b"eth0\0");
        assert_eq!(IfReq::named("a-name-that-is-too-long").name[15], 0);
    }
}
