//! Comments, stored as nft stores them: libnftnl's "udata" TLVs in a
//! rule's `NFTA_RULE_USERDATA` (and a table's or chain's userdata).

use crate::rule::validate_comment;
use crate::FilterError;

/// `NFTNL_UDATA_RULE_COMMENT`, `NFTNL_UDATA_TABLE_COMMENT` and
/// `NFTNL_UDATA_CHAIN_COMMENT`: all 0.
const UDATA_COMMENT: u8 = 0;

/// The longest comment nft accepts (`NFTNL_UDATA_COMMENT_MAXLEN`), which
/// knftables enforces too (`CommentLengthMax`).
pub const MAX_COMMENT_LEN: usize = 128;

/// The userdata holding `comment`: type 0, length with the NUL, the text,
/// a NUL. `nft list` prints it as `comment "..."`.
pub(crate) fn comment_udata(comment: &str) -> Result<Vec<u8>, FilterError> {
    validate_comment(comment, MAX_COMMENT_LEN, false)?;
    let mut udata = vec![UDATA_COMMENT, (comment.len() + 1) as u8];
    udata.extend_from_slice(comment.as_bytes());
    udata.push(0);
    Ok(udata)
}

/// The comment in userdata, if it has one: the first TLV of type 0. Other
/// TLVs (nft stores a set's key byte order this way) are skipped; a TLV
/// running past the end ends the search.
pub(crate) fn comment_of(udata: &[u8]) -> Option<String> {
    comment_bytes(udata).map(|text| String::from_utf8_lossy(text).into_owned())
}

/// The comment in userdata as [`comment_of`] finds it, its bytes borrowed
/// (without the NUL).
pub(crate) fn comment_bytes(udata: &[u8]) -> Option<&[u8]> {
    let mut rest = udata;
    while let [kind, len, tail @ ..] = rest {
        let value = tail.get(..usize::from(*len))?;
        if *kind == UDATA_COMMENT {
            return Some(value.strip_suffix(&[0]).unwrap_or(value));
        }
        rest = &tail[usize::from(*len)..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_is_stored_as_libnftnl_stores_it() {
        // nft --debug=netlink prints `userdata = { \x00\x04abc\x00 }` for
        // `comment "abc"`.
        assert_eq!(comment_udata("abc").unwrap(), b"\x00\x04abc\x00");
        assert_eq!(comment_of(b"\x00\x04abc\x00").as_deref(), Some("abc"));
    }

    #[test]
    fn comments_nft_cannot_store_or_print_back_are_refused() {
        assert!(comment_udata(&"x".repeat(128)).is_ok());
        let long = comment_udata(&"x".repeat(129)).unwrap_err();
        assert!(long.to_string().contains("longer than 128 bytes"), "{long}");
        assert!(comment_udata("a\"b").is_err());
        assert!(comment_udata("a\nb").is_err());
    }

    #[test]
    fn other_tlvs_are_skipped_and_truncated_ones_give_no_comment() {
        assert_eq!(
            comment_of(b"\x01\x01\x02\x00\x02x\x00").as_deref(),
            Some("x")
        );
        assert_eq!(comment_of(b"\x00\x09abc"), None);
        assert_eq!(comment_of(b""), None);
    }
}
