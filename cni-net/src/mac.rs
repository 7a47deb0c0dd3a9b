//! Ethernet hardware addresses.

use std::fmt;
use std::str::FromStr;

/// A 48-bit Ethernet hardware address, written `aa:bb:cc:dd:ee:ff` (the
/// form CNI results use; parsing also takes upper case and `-`).
///
/// Go: `net.HardwareAddr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mac(pub [u8; 6]);

/// A string that is not a 48-bit MAC address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address {0:?}: expected six hexadecimal pairs like 0a:58:0a:f4:00:02")]
pub struct MacError(pub String);

impl FromStr for Mac {
    type Err = MacError;

    fn from_str(s: &str) -> Result<Mac, MacError> {
        let mut bytes = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for byte in &mut bytes {
            let part = parts.next().filter(|p| p.len() == 2);
            *byte = part
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| MacError(s.to_owned()))?;
        }
        if parts.next().is_some() {
            return Err(MacError(s.to_owned()));
        }
        Ok(Mac(bytes))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_round_trip_in_lower_case() {
        let mac: Mac = "0A:58:0a:f4:00:02".parse().unwrap();
        assert_eq!(mac.to_string(), "0a:58:0a:f4:00:02");
        assert_eq!("0a-58-0a-f4-00-02".parse::<Mac>(), Ok(mac));
    }

    #[test]
    fn malformed_macs_are_rejected_naming_the_text() {
        for bad in [
            "",
            "0a:58:0a:f4:00",
            "0a:58:0a:f4:00:02:03",
            "0a:58:0a:f4:00:zz",
            "a:58:0a:f4:00:002",
        ] {
            let err = bad.parse::<Mac>().unwrap_err();
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }
}
