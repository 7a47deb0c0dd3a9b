//! What a configuration asks of a link, checked before anything changes:
//! its name and its MTU.

use crate::NetError;

/// The kernel's limit on interface names: `IFNAMSIZ` (16) with its NUL.
pub const MAX_IFNAME_LEN: usize = 15;

/// Checks a name the kernel will be asked to give a link, as the kernel's
/// `dev_valid_name` does: not empty, at most 15 bytes, not `.` or `..`, no
/// `/`, `:` or byte the kernel's `isspace` takes for a space (tab, line
/// feed, vertical tab, form feed, carriage return, space, and 0xA0, which
/// it reads as Latin-1's no-break space even inside a UTF-8 character);
/// and, stricter than the kernel, no NUL or other control character.
///
/// Any other byte is the kernel's to take, so `a+0`, `a@x` and `aé` pass.
///
/// Where we deliberately differ: the kernel lets control characters
/// through, and netlink cuts a name at its first NUL, so `"eth0\0x"` would
/// name `eth0`. A control character in an interface name is a mistake or
/// an attack, never a name a runtime means: refused here.
///
/// Go: `ip.ValidateIfName` (plugins `pkg/ip`: containernetworking/cni
/// `pkg/utils`), which follows `dev_valid_name` too but checks Unicode
/// whitespace rather than the kernel's.
pub fn validate_ifname(name: &str) -> Result<(), NetError> {
    // The kernel's isspace (lib/ctype.c `_S`), byte by byte.
    let kernel_space = |b: &u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0xa0);
    let reason = if name.is_empty() {
        "empty"
    } else if name.len() > MAX_IFNAME_LEN {
        "longer than 15 bytes"
    } else if name == "." || name == ".." {
        "not a name"
    } else if name.contains(char::is_control) {
        "contains NUL or another control character"
    } else if name.contains(['/', ':']) || name.as_bytes().iter().any(kernel_space) {
        "contains '/', ':' or whitespace"
    } else {
        return Ok(());
    };
    Err(NetError::InvalidName {
        name: name.to_owned(),
        reason,
    })
}

/// Checks an MTU a configuration asks for a link: 68 (the least an IPv4
/// link must carry, RFC 791) to 65535 (the largest IP packet), the range
/// the sample `bridge` and `veth` plugins accept.
pub fn validate_mtu(mtu: u32) -> Result<(), NetError> {
    if (68..=65535).contains(&mtu) {
        Ok(())
    } else {
        Err(NetError::InvalidMtu(mtu))
    }
}

/// The MTU a configuration's `mtu` field asks for: `None` when absent or
/// 0, else the value once [`validate_mtu`] accepts it.
///
/// The reference plugins read `mtu` into a Go `int`, whose zero value
/// means "the kernel's default", and configurations written from their
/// Go structs always carry it (`"mtu": 0`); so 0 is unset here too.
///
/// ```
/// assert_eq!(cni_net::configured_mtu(Some(0)).unwrap(), None);
/// assert_eq!(cni_net::configured_mtu(Some(1450)).unwrap(), Some(1450));
/// assert!(cni_net::configured_mtu(Some(20)).is_err());
/// ```
///
/// Go: `if n.MTU != 0` before each `LinkSetMTU` (plugins `bridge`,
/// `ptp`, `macvlan`).
pub fn configured_mtu(mtu: Option<u32>) -> Result<Option<u32>, NetError> {
    match mtu {
        None | Some(0) => Ok(None),
        Some(mtu) => validate_mtu(mtu).map(|()| Some(mtu)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_kernel_would_refuse_are_rejected_naming_the_reason() {
        for (name, reason) in [
            ("", "empty"),
            ("sixteen-bytes-xx", "longer than 15 bytes"),
            ("..", "not a name"),
            ("a/b", "contains '/', ':' or whitespace"),
            ("eth0:1", "contains '/', ':' or whitespace"),
            ("e th", "contains '/', ':' or whitespace"),
            ("e\u{a0}th", "contains '/', ':' or whitespace"),
            // U+00E0 is C3 A0: the kernel's isspace reads the 0xA0 byte.
            ("a\u{e0}", "contains '/', ':' or whitespace"),
            ("eth0\0x", "contains NUL or another control character"),
            ("eth\u{1b}0", "contains NUL or another control character"),
            ("eth\u{7f}", "contains NUL or another control character"),
            ("eth\u{85}", "contains NUL or another control character"),
        ] {
            let err = validate_ifname(name).unwrap_err();
            assert!(
                matches!(&err, NetError::InvalidName { reason: r, .. } if *r == reason),
                "{name:?}: {err}"
            );
        }
        validate_ifname("fifteen-bytes-x").unwrap();
    }

    #[test]
    fn every_name_the_kernel_takes_without_control_characters_passes() {
        // `é` is C3 A9, and U+2003 (em space, E2 80 83) holds no byte the
        // kernel's isspace knows.
        for name in [
            "a+0",
            "a@x",
            "a\u{e9}",
            "eth0.100",
            "-",
            "...",
            "a\u{2003}b",
        ] {
            validate_ifname(name).unwrap_or_else(|e| panic!("{name:?}: {e}"));
        }
    }

    #[test]
    fn mtus_outside_68_to_65535_are_rejected_naming_the_value() {
        for mtu in [0, 67, 65536] {
            let err = validate_mtu(mtu).unwrap_err();
            assert!(matches!(err, NetError::InvalidMtu(m) if m == mtu), "{err}");
            assert_eq!(
                err.to_string(),
                format!("{mtu}: must be between 68 and 65535")
            );
        }
        for mtu in [68, 1500, 65535] {
            validate_mtu(mtu).unwrap();
        }
    }
}
