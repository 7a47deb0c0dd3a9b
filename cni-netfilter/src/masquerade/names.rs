//! The reference's names for masquerading rules: iptables chain names and
//! comments, nftables comments with their hashes.

use std::fmt::Write;

use super::Attachment;
use crate::chain_name::hashed;

/// The longest comment knftables writes (`knftables.CommentLengthMax`).
pub(crate) const MAX_NFT_COMMENT_LEN: usize = 128;

/// The per-container iptables chain: `CNI-` and 24 hex digits of the
/// SHA-512 of network name and container id (the reference's iptables
/// rules ignore the interface name).
///
/// Go: plugins `utils.FormatChainName`.
pub fn chain_name(network: &str, container_id: &str) -> String {
    crate::chain_name("", network, container_id)
}

/// The comment of the reference's iptables rules: `name: "NET" id: "ID"`,
/// each quoted as Go's `%q` quotes it.
///
/// Go: plugins `utils.FormatComment`.
pub fn iptables_comment(network: &str, container_id: &str) -> String {
    format!("name: {} id: {}", go_quote(network), go_quote(container_id))
}

/// The hash that starts the nftables comments of every attachment of
/// `network`: 16 hex digits.
///
/// Go: plugins `ip.hashForNetwork`.
pub(crate) fn network_hash(network: &str) -> String {
    hashed("", network, 16)
}

/// The hash that starts the nftables comments of one attachment: the
/// network's hash, `-`, 16 hex digits of `IFNAME:CONTAINERID`.
///
/// Go: plugins `ip.hashForInstance`.
pub(crate) fn instance_hash(at: &Attachment) -> String {
    let attachment = format!("{}:{}", at.ifname, at.container_id);
    format!(
        "{}-{}",
        network_hash(at.network),
        hashed("", &attachment, 16)
    )
}

/// The comment of an attachment's nftables rules: its hash, then a
/// readable tail without `"`, cut to 128 bytes (at a character boundary).
///
/// Go: plugins `ip.commentForInstance`.
pub fn nft_comment(at: &Attachment) -> String {
    let plain = |s: &str| s.replace('"', "");
    let mut comment = format!(
        "{}, net: {}, if: {}, id: {}",
        instance_hash(at),
        plain(at.network),
        plain(at.ifname),
        plain(at.container_id)
    );
    if comment.len() > MAX_NFT_COMMENT_LEN {
        let mut end = MAX_NFT_COMMENT_LEN;
        while !comment.is_char_boundary(end) {
            end -= 1;
        }
        comment.truncate(end);
    }
    comment
}

/// `s` quoted as Go's `%q` quotes a string: `"` and `\` escaped, control
/// characters as `\n`, `\t`, `\r` or `\xNN`, the rest as it is.
fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_comments_are_the_references() {
        // The fixture's comment (tests/fixtures/masquerade_nftables.nft),
        // recorded from the reference's own code.
        let at = Attachment {
            network: "podman",
            ifname: "eth0",
            container_id: "ctr-1",
        };
        assert_eq!(
            nft_comment(&at),
            "1d8721804f16f412-1c8f6ae798001240, net: podman, if: eth0, id: ctr-1"
        );
        let chain = chain_name("podman", "ctr-1");
        assert_eq!(chain.len(), 28);
        assert!(chain.starts_with("CNI-"));
        assert_eq!(
            iptables_comment("podman", "ctr-1"),
            r#"name: "podman" id: "ctr-1""#
        );
        assert_eq!(go_quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
    }

    #[test]
    fn a_long_comment_is_cut_to_what_knftables_writes() {
        let id = "c".repeat(200);
        let at = Attachment {
            network: "n\"et",
            ifname: "eth0",
            container_id: &id,
        };
        let comment = nft_comment(&at);
        assert_eq!(comment.len(), MAX_NFT_COMMENT_LEN);
        assert!(comment.contains("net: net,"), "{comment}");
    }
}
