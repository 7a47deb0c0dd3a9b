//! The reference's names for per-attachment iptables chains: a prefix,
//! then hex digits of a SHA-512 of the network name and container ID, 28
//! bytes in all (iptables' longest chain name).

use sha2::{Digest, Sha512};

/// The length of every name [`chain_name`] gives: iptables' limit.
pub const CHAIN_NAME_LEN: usize = 28;

/// The chain name the reference gives an attachment: `CNI-`, then
/// `prefix`, then the hex SHA-512 of `network` followed by
/// `container_id`, cut to [`CHAIN_NAME_LEN`] bytes. A prefix too long to
/// leave room for any hash digit is cut too, so the name always fits.
///
/// portmap names its per-container chain `CNI-DN-<hash>` with the prefix
/// `"DN-"`; ipMasq names its chain `CNI-<hash>` with an empty prefix.
///
/// ```
/// use cni_netfilter::chain_name;
///
/// let name = chain_name("DN-", "cni0", "ctr-1");
/// assert!(name.starts_with("CNI-DN-"));
/// assert_eq!(name.len(), 28);
/// ```
///
/// Go: plugins `utils.MustFormatChainNameWithPrefix` (and
/// `utils.FormatChainName` for the empty prefix), which panics where this
/// cuts.
pub fn chain_name(prefix: &str, network: &str, container_id: &str) -> String {
    hashed(
        &format!("CNI-{prefix}"),
        &format!("{network}{container_id}"),
        CHAIN_NAME_LEN,
    )
}

/// `prefix` then the hex SHA-512 of `input`, cut to `len` bytes (at a
/// character boundary when the prefix is not ASCII): the one hashing rule
/// behind the reference's per-attachment names (iptables chains, nftables
/// comments, the bandwidth plugin's ifb devices).
///
/// ```
/// let ifb = cni_netfilter::hashed("bwp", "net1c1", 15);
/// assert_eq!(ifb, "bwpc2d892b58e87");
/// ```
///
/// Go: plugins `utils.MustFormatHashWithPrefix`.
pub fn hashed(prefix: &str, input: &str, len: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(prefix.len() + 128);
    out.push_str(prefix);
    for byte in Sha512::digest(input.as_bytes()) {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    let mut end = len.min(out.len());
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_equal_the_reference_ones() {
        // printf '%s' "$NAME$ID" | sha512sum, as utils.MustFormatHashWithPrefix hashes it.
        assert_eq!(
            chain_name("DN-", "cni0", "ctr-1"),
            format!("CNI-DN-{}", &sha512_hex("cni0ctr-1")[..21])
        );
        assert_eq!(
            chain_name("", "mynet", "abc"),
            format!("CNI-{}", &sha512_hex("mynetabc")[..24])
        );
        // A value from the reference's own tests (pkg/utils/utils_test.go):
        // FormatChainName("test", "1234") is "CNI-2bbe0c48b91a7d1b8a6753a8".
        assert_eq!(
            chain_name("", "test", "1234"),
            "CNI-2bbe0c48b91a7d1b8a6753a8"
        );
        assert_eq!(
            chain_name("PREFIX-", "test", "1234"),
            "CNI-PREFIX-2bbe0c48b91a7d1b8"
        );
    }

    #[test]
    fn a_prefix_too_long_still_gives_a_name_iptables_takes() {
        assert_eq!(chain_name(&"X".repeat(40), "n", "i").len(), CHAIN_NAME_LEN);
        assert!(chain_name(&"é".repeat(20), "n", "i").len() <= CHAIN_NAME_LEN);
    }

    fn sha512_hex(text: &str) -> String {
        Sha512::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}
