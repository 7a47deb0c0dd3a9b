//! The firewalld backend: the container's addresses become sources of
//! `firewalldZone` (default `trusted`), so firewalld applies that zone's
//! policy to their traffic.
//!
//! Go: `fwdBackend` (plugins `plugins/meta/firewall/firewalld.go`).

use cni_netfilter::firewalld::{Firewalld, FirewalldError, FIREWALLD_NAME};
use cni_types::{Error, IpNetwork};

/// The source firewalld is given for a container address: the address
/// alone, as a /32 or /128 network, whatever the prefix of the previous
/// result (`10.88.0.5/16` gives `10.88.0.5/32`).
///
/// Go: `ipString`.
pub fn source(address: &IpNetwork) -> String {
    let ip = address.addr();
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    format!("{ip}/{bits}")
}

/// firewalld on the system bus, for `"backend": "firewalld"`: an error
/// (code 11, try again later) when it is not running.
///
/// Go: `newFirewalldBackend`, which connects to the bus only (its calls
/// then fail one by one).
pub fn required() -> Result<Firewalld, Error> {
    Firewalld::connect_system()?.ok_or_else(|| {
        FirewalldError::NotRunning {
            name: FIREWALLD_NAME,
        }
        .into()
    })
}

/// firewalld when it runs, for the default choice; `None` when it does
/// not or the bus cannot be reached, as the reference's probe.
///
/// Go: `isFirewalldRunning`.
pub fn probe() -> Option<Firewalld> {
    Firewalld::connect_system().ok().flatten()
}

/// ADD: every address into `zone`. An address already there is success.
///
/// Go: `fwdBackend.Add`.
pub fn add(fw: &Firewalld, zone: &str, addresses: &[IpNetwork]) -> Result<(), Error> {
    for address in addresses {
        fw.add_source(zone, &source(address))?;
    }
    Ok(())
}

/// DEL: every address out of `zone`. An address in no zone, or in
/// another zone (`ZONE_CONFLICT`: not ours to remove), is success.
///
/// Go: `fwdBackend.Del`, which ignores every error; a failure to talk to
/// firewalld is reported here.
pub fn del(fw: &Firewalld, zone: &str, addresses: &[IpNetwork]) -> Result<(), Error> {
    for address in addresses {
        match fw.remove_source(zone, &source(address)) {
            Err(e) if e.firewalld_code() == Some("ZONE_CONFLICT") => {}
            other => other?,
        }
    }
    Ok(())
}

/// CHECK: every address is a source of `zone`.
///
/// Go: `fwdBackend.Check`, which only fails when the query does (not
/// when the answer is "no").
pub fn check(fw: &Firewalld, zone: &str, addresses: &[IpNetwork]) -> Result<(), Error> {
    for address in addresses {
        let source = source(address);
        if !fw.query_source(zone, &source)? {
            return Err(Error::new(
                cni_types::Code::INTERNAL,
                format!("failed to find the address {source} in {zone} zone"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_the_container_address_alone_as_the_reference_gives_it() {
        for (address, want) in [
            ("10.88.0.5/16", "10.88.0.5/32"),
            ("10.88.0.5/32", "10.88.0.5/32"),
            ("fd00::5/64", "fd00::5/128"),
            ("2001:db8::1/128", "2001:db8::1/128"),
        ] {
            assert_eq!(source(&address.parse().unwrap()), want, "{address}");
        }
    }
}
