//! MAC addresses, typed.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An Ethernet (EUI-48) hardware address, as an interface carries it.
///
/// Parses the three notations Go's `net.ParseMAC` accepts for 48 bits
/// (`02:00:5e:10:00:01`, `02-00-5E-10-00-01`, `0200.5e10.0001`) and prints
/// the one Go's `HardwareAddr.String` prints (lower case, colons), which is
/// what results carry. JSON is that string.
///
/// ```
/// use cni_types::Mac;
///
/// let mac: Mac = "02-00-5E-10-00-01".parse().unwrap();
/// assert_eq!(mac.to_string(), "02:00:5e:10:00:01");
/// assert!(mac.is_unicast() && mac.is_local());
/// assert!("02:00:5e:10:00".parse::<Mac>().is_err());
/// ```
///
/// Go: `net.HardwareAddr`. Unlike Go, the 8- and 20-byte forms (EUI-64,
/// InfiniBand) are refused: no Ethernet link takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

/// Text that is not a 48-bit MAC address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a MAC address (six hex octets, as 02:00:5e:10:00:01)")]
pub struct MacError {
    text: String,
}

impl Mac {
    /// The octets.
    pub fn octets(self) -> [u8; 6] {
        self.0
    }

    /// Whether this addresses one station: the group bit (the low bit of
    /// the first octet) is clear. Only such an address can be an
    /// interface's own.
    pub fn is_unicast(self) -> bool {
        self.0[0] & 1 == 0
    }

    /// Whether this is a locally administered address (the second-lowest
    /// bit of the first octet), as the kernel generates for veth pairs.
    pub fn is_local(self) -> bool {
        self.0[0] & 2 != 0
    }
}

impl FromStr for Mac {
    type Err = MacError;

    fn from_str(s: &str) -> Result<Mac, MacError> {
        let err = || MacError { text: s.to_owned() };
        // Groups of two hex digits split by ':' or '-', or of four split by
        // '.': 6 octets either way.
        let (sep, width) = match s.len() {
            17 if s.as_bytes()[2] == b':' => (':', 2),
            17 if s.as_bytes()[2] == b'-' => ('-', 2),
            14 => ('.', 4),
            _ => return Err(err()),
        };
        let mut octets = [0u8; 6];
        let mut n = 0;
        for group in s.split(sep) {
            if group.len() != width || !group.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err());
            }
            for pair in group.as_bytes().chunks(2) {
                let pair = std::str::from_utf8(pair).map_err(|_| err())?;
                *octets.get_mut(n).ok_or_else(err)? =
                    u8::from_str_radix(pair, 16).map_err(|_| err())?;
                n += 1;
            }
        }
        if n != 6 {
            return Err(err());
        }
        Ok(Mac(octets))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl Serialize for Mac {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Mac, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_go_notation_of_48_bits_parses_to_the_same_address() {
        let want = Mac([0x02, 0x00, 0x5e, 0x10, 0x00, 0xab]);
        for text in ["02:00:5e:10:00:ab", "02-00-5E-10-00-AB", "0200.5e10.00ab"] {
            assert_eq!(text.parse::<Mac>(), Ok(want), "{text}");
        }
        assert_eq!(want.to_string(), "02:00:5e:10:00:ab");
    }

    #[test]
    fn malformed_text_is_refused_naming_it() {
        for text in [
            "",
            "02:00:5e:10:00",
            "02:00:5e:10:00:ab:cd",
            "02:00:5e:10:00:zz",
            "02:00-5e:10:00:ab",
            "2:00:5e:10:00:abc",
            "0200.5e10.00ab.0000",
            "02:00:5e:10:00:+b",
            "02:00:5e:10:00:ab ",
            "0000:0000:0000:0000",
        ] {
            let err = text.parse::<Mac>().unwrap_err();
            assert!(err.to_string().contains(&format!("{text:?}")), "{err}");
        }
    }

    #[test]
    fn json_round_trips_as_the_printed_string() {
        let mac: Mac = serde_json::from_str(r#""0A:0B:0C:0D:0E:0F""#).unwrap();
        assert_eq!(
            serde_json::to_string(&mac).unwrap(),
            r#""0a:0b:0c:0d:0e:0f""#
        );
        assert!(serde_json::from_str::<Mac>(r#""nope""#).is_err());
    }

    #[test]
    fn unicast_and_local_bits() {
        assert!(!"01:00:5e:00:00:01".parse::<Mac>().unwrap().is_unicast());
        assert!("00:16:3e:00:00:01".parse::<Mac>().unwrap().is_unicast());
        assert!(!"00:16:3e:00:00:01".parse::<Mac>().unwrap().is_local());
    }
}
