//! D-Bus server addresses: `unix:path=/run/dbus/system_bus_socket`.
//!
//! The D-Bus specification ("Server Addresses"): `transport:key=value,..`,
//! several separated by `;` and tried in order, values percent-escaped.
//! Only the `unix` transport with `path` or `abstract` is spoken here; the
//! system bus is always one of those.
//!
//! Go: `github.com/godbus/dbus/v5` `getSystemBusPlatformAddress` and
//! `transport_unix.go`.

use std::os::unix::net::SocketAddr;

use super::FirewalldError;

/// The environment variable naming the system bus: "If the
/// `DBUS_SYSTEM_BUS_ADDRESS` environment variable is set, the system bus
/// is at that address".
pub const SYSTEM_BUS_VARIABLE: &str = "DBUS_SYSTEM_BUS_ADDRESS";

/// The system bus when the variable is not set: the specification's
/// well-known `unix:path=/var/run/dbus/system_bus_socket` (`/var/run` is
/// `/run` on every current distribution, and dbus-daemon listens there).
pub const DEFAULT_SYSTEM_BUS: &str = "unix:path=/run/dbus/system_bus_socket";

/// The socket addresses an address string lists, in order.
pub(crate) fn parse(address: &str) -> Result<Vec<SocketAddr>, FirewalldError> {
    let bad = |reason: String| FirewalldError::Address {
        address: address.to_owned(),
        reason,
    };
    let mut out = Vec::new();
    let mut unsupported = Vec::new();
    for entry in address.split(';').filter(|e| !e.is_empty()) {
        let (transport, params) = entry
            .split_once(':')
            .ok_or_else(|| bad(format!("{entry:?} has no transport")))?;
        if transport != "unix" {
            unsupported.push(transport);
            continue;
        }
        let mut socket = None;
        for pair in params.split(',').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(format!("{pair:?} is not key=value")))?;
            let value = unescape(value).map_err(&bad)?;
            let addr = match key {
                "path" => SocketAddr::from_pathname(bytes_to_path(&value)),
                "abstract" => abstract_name(&value),
                _ => continue,
            };
            socket = Some(addr.map_err(|e| bad(format!("{key}: {e}")))?);
        }
        match socket {
            Some(addr) => out.push(addr),
            None => unsupported.push("unix without path or abstract"),
        }
    }
    if out.is_empty() {
        return Err(bad(if unsupported.is_empty() {
            "it is empty".into()
        } else {
            format!(
                "only {} (this client speaks unix sockets)",
                unsupported.join(", ")
            )
        }));
    }
    Ok(out)
}

fn bytes_to_path(bytes: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(bytes))
}

fn abstract_name(name: &[u8]) -> std::io::Result<SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    SocketAddr::from_abstract_name(name)
}

/// "The set of optionally-escaped bytes is: `[-0-9A-Za-z_/.\*]`. To escape,
/// each byte (note, not character) which is not in the set of
/// optionally-escaped bytes must be replaced with an ASCII percent (`%`)
/// and the value of the byte in hex."
fn unescape(value: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(value.len());
    let mut bytes = value.bytes();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        let hex = [bytes.next(), bytes.next()];
        let digits = match hex {
            [Some(h), Some(l)] => [h, l],
            _ => return Err(format!("{value:?} ends inside a %-escape")),
        };
        let byte = std::str::from_utf8(&digits)
            .ok()
            .and_then(|d| u8::from_str_radix(d, 16).ok())
            .ok_or_else(|| format!("{value:?} has a %-escape that is not two hex digits"))?;
        out.push(byte);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_system_bus_is_the_well_known_socket() {
        let addrs = parse(DEFAULT_SYSTEM_BUS).unwrap();
        assert_eq!(
            addrs[0].as_pathname(),
            Some(std::path::Path::new("/run/dbus/system_bus_socket"))
        );
    }

    #[test]
    fn escaped_paths_guids_and_other_transports_are_understood() {
        let addrs =
            parse("tcp:host=localhost,port=1;unix:path=/tmp/a%20b,guid=0123;unix:abstract=x%2fy")
                .unwrap();
        assert_eq!(addrs.len(), 2);
        assert_eq!(
            addrs[0].as_pathname(),
            Some(std::path::Path::new("/tmp/a b"))
        );
        use std::os::linux::net::SocketAddrExt;
        assert_eq!(addrs[1].as_abstract_name(), Some(&b"x/y"[..]));
    }

    #[test]
    fn an_address_with_nothing_usable_says_why() {
        for (address, why) in [
            ("", "empty"),
            ("tcp:host=localhost", "only tcp"),
            ("unix:tmpdir=/tmp", "without path"),
            ("nocolon", "no transport"),
            ("unix:path=/a%2", "%-escape"),
            ("unix:path=/a%zz", "hex digits"),
        ] {
            let err = parse(address).unwrap_err();
            assert!(err.to_string().contains(why), "{address}: {err}");
            assert!(err.to_string().contains(address), "{address}: {err}");
        }
    }
}
