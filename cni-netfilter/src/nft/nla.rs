//! Netlink attributes, written and read: a length, a type and a value
//! padded to 4 bytes, small enough to do here.

use crate::FilterError;

/// `NLA_F_NESTED`: the attribute holds attributes.
const NLA_F_NESTED: u16 = 0x8000;
/// `NLA_F_NET_BYTEORDER`, which nf_tables does not use but may be set.
const NLA_F_NET_BYTEORDER: u16 = 0x4000;

/// A growing buffer of netlink attributes, each padded to 4 bytes. Numbers
/// go in big-endian, as nf_tables wants them.
#[derive(Debug, Default)]
pub(crate) struct Attrs {
    pub(crate) buf: Vec<u8>,
    /// An attribute outgrew the 16-bit length field: the buffer is not
    /// to be sent.
    pub(crate) overflow: bool,
}

impl Attrs {
    /// An attribute with raw bytes.
    pub(crate) fn bytes(&mut self, kind: u16, value: &[u8]) {
        let start = self.header(kind);
        self.buf.extend_from_slice(value);
        self.finish(start);
    }

    /// A big-endian u32.
    pub(crate) fn u32(&mut self, kind: u16, value: u32) {
        self.bytes(kind, &value.to_be_bytes());
    }

    /// A big-endian u64.
    pub(crate) fn u64(&mut self, kind: u16, value: u64) {
        self.bytes(kind, &value.to_be_bytes());
    }

    /// A NUL-terminated string.
    pub(crate) fn str(&mut self, kind: u16, value: &str) {
        let start = self.header(kind);
        self.buf.extend_from_slice(value.as_bytes());
        self.buf.push(0);
        self.finish(start);
    }

    /// A nested attribute whose content `inner` writes.
    pub(crate) fn nested(&mut self, kind: u16, inner: impl FnOnce(&mut Attrs)) {
        let start = self.header(kind | NLA_F_NESTED);
        inner(self);
        self.finish(start);
    }

    fn header(&mut self, kind: u16) -> usize {
        let start = self.buf.len();
        self.buf.extend_from_slice(&[0, 0]);
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        start
    }

    /// Writes the length (without padding), then pads.
    fn finish(&mut self, start: usize) {
        let len = u16::try_from(self.buf.len() - start).unwrap_or_else(|_| {
            self.overflow = true;
            u16::MAX
        });
        self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
        self.buf.resize(self.buf.len().next_multiple_of(4), 0);
    }
}

/// The attributes in `payload` as (type without flags, value); a length
/// that runs past the end is an error, not a panic.
pub(crate) fn parse(payload: &[u8]) -> Result<Vec<(u16, &[u8])>, FilterError> {
    Walk(payload).collect()
}

/// The first attribute of each of `kinds` in `payload` (flags aside),
/// borrowed: what a listing reads of each of thousands of rules, without
/// the allocation [`parse`] makes. A length that runs past the end is an
/// error, as in [`parse`].
pub(crate) fn find<const N: usize>(
    payload: &[u8],
    kinds: [u16; N],
) -> Result<[Option<&[u8]>; N], FilterError> {
    let mut found = [None; N];
    for attr in Walk(payload) {
        let (kind, value) = attr?;
        if let Some(at) = kinds.iter().position(|k| *k == kind) {
            found[at].get_or_insert(value);
        }
    }
    Ok(found)
}

/// The attributes of a payload in order, as (type without flags, value);
/// a length that runs past the end is an error and ends the walk.
struct Walk<'a>(&'a [u8]);

impl<'a> Iterator for Walk<'a> {
    type Item = Result<(u16, &'a [u8]), FilterError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.0;
        if rest.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let kind = u16::from_ne_bytes([rest[2], rest[3]]) & !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);
        if len < 4 || len > rest.len() {
            self.0 = &[];
            return Some(Err(malformed(format!(
                "an attribute of {len} bytes in {} bytes",
                rest.len()
            ))));
        }
        self.0 = &rest[len.next_multiple_of(4).min(rest.len())..];
        Some(Ok((kind, &rest[4..len])))
    }
}

/// A NUL-terminated string attribute's bytes, without the NUL: what a
/// name is compared with before anything is allocated for it.
pub(crate) fn text(value: &[u8]) -> &[u8] {
    value.strip_suffix(&[0]).unwrap_or(value)
}

/// Whether the attributes `ours` (as we encode them: nested ones
/// flagged `NLA_F_NESTED`) say what `theirs` (as the kernel dumps them:
/// not flagged, and in its own order of attributes) says: the same
/// attributes at each level in any order, attributes of one type in the
/// same order (a list's elements), nested ones compared the same way,
/// others byte for byte. An attribute only the kernel lists whose value
/// is all zeros is a default it echoes (bitwise's `NFTA_BITWISE_OP`,
/// `NFT_BITWISE_MASK_XOR`, since Linux 5.6) and counts as left out.
/// Bytes identical to ours are equal at once (ours always parse);
/// otherwise anything that does not parse is unequal.
pub(crate) fn same_attrs(ours: &[u8], theirs: &[u8]) -> bool {
    if ours == theirs {
        return true;
    }
    // Borrowed, not copied: a plugin compares every listed rule of a
    // chain with each of its own, level by level.
    fn level(bytes: &[u8]) -> Option<Vec<(u16, &[u8])>> {
        let mut attrs = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            if rest.len() < 4 {
                return None;
            }
            let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
            if len < 4 || len > rest.len() {
                return None;
            }
            attrs.push((u16::from_ne_bytes([rest[2], rest[3]]), &rest[4..len]));
            rest = &rest[len.next_multiple_of(4).min(rest.len())..];
        }
        attrs.sort_by_key(|(kind, _)| kind & !(NLA_F_NESTED | NLA_F_NET_BYTEORDER));
        Some(attrs)
    }
    let (Some(ours), Some(mut theirs)) = (level(ours), level(theirs)) else {
        return false;
    };
    let flags = NLA_F_NESTED | NLA_F_NET_BYTEORDER;
    theirs.retain(|(kind, value)| {
        ours.iter().any(|(k, _)| k & !flags == kind & !flags) || value.iter().any(|b| *b != 0)
    });
    ours.len() == theirs.len()
        && ours.iter().zip(&theirs).all(|((ok, ov), (tk, tv))| {
            ok & !flags == tk & !flags
                && if ok & NLA_F_NESTED != 0 {
                    same_attrs(ov, tv)
                } else {
                    ov == tv
                }
        })
}

/// A NUL-terminated string attribute.
pub(crate) fn string(value: &[u8]) -> Result<String, FilterError> {
    String::from_utf8(text(value).to_vec()).map_err(|e| malformed(e.to_string()))
}

/// A big-endian u32 or u64 attribute.
pub(crate) fn number(value: &[u8]) -> Result<u64, FilterError> {
    match value.len() {
        4 => Ok(u32::from_be_bytes(value.try_into().unwrap_or_default()).into()),
        8 => Ok(u64::from_be_bytes(value.try_into().unwrap_or_default())),
        n => Err(malformed(format!("a number attribute of {n} bytes"))),
    }
}

pub(crate) fn malformed(reason: impl Into<String>) -> FilterError {
    FilterError::Malformed {
        peer: "the kernel",
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clears the nested flag where we set it, as the kernel dumps.
    fn unflagged(attrs: &[u8]) -> Vec<u8> {
        let mut out = attrs.to_vec();
        let mut at = 0;
        while at + 4 <= out.len() {
            let len = usize::from(u16::from_ne_bytes([out[at], out[at + 1]]));
            let kind = u16::from_ne_bytes([out[at + 2], out[at + 3]]);
            out[at + 2..at + 4].copy_from_slice(&(kind & !NLA_F_NESTED).to_ne_bytes());
            // Into a nested attribute's content, else past the value.
            at += if kind & NLA_F_NESTED != 0 {
                4
            } else {
                len.next_multiple_of(4)
            };
        }
        out
    }

    #[test]
    fn a_dump_compares_equal_in_any_attribute_order_but_not_list_order() {
        let expr = |order: &[u16]| {
            let mut a = Attrs::default();
            a.nested(1, |elem| {
                elem.str(1, "fib");
                elem.nested(2, |data| {
                    order.iter().for_each(|k| data.u32(*k, u32::from(*k)))
                });
            });
            a.buf
        };
        let ours = expr(&[3, 2, 1]);
        assert!(same_attrs(&ours, &unflagged(&expr(&[1, 2, 3]))));
        assert!(!same_attrs(&ours, &unflagged(&expr(&[1, 2]))));
        let two = |first: &str, second: &str| {
            let mut a = Attrs::default();
            a.nested(1, |e| e.str(1, first));
            a.nested(1, |e| e.str(1, second));
            a.buf
        };
        assert!(same_attrs(&two("a", "b"), &unflagged(&two("a", "b"))));
        assert!(!same_attrs(&two("a", "b"), &unflagged(&two("b", "a"))));
        assert!(!same_attrs(&ours, &ours[..ours.len() - 1]));
        // A zero the kernel echoes for an attribute we left out is its
        // default; anything else it adds is a difference.
        let echoed = |value: u32| {
            let mut attrs = Attrs::default();
            attrs.str(1, "a");
            attrs.u32(6, value);
            attrs.buf
        };
        let mut plain = Attrs::default();
        plain.str(1, "a");
        assert!(same_attrs(&plain.buf, &echoed(0)));
        assert!(!same_attrs(&plain.buf, &echoed(1)));
    }

    #[test]
    fn a_listing_finds_the_first_of_each_attribute_and_refuses_a_truncated_one() {
        let mut a = Attrs::default();
        a.str(1, "cni_hostport");
        a.nested(4, |list| list.u32(1, 7));
        a.str(1, "second");
        a.u64(3, 42);
        let [table, handle, missing, exprs] = find(&a.buf, [1, 3, 9, 4]).unwrap();
        assert_eq!(table.map(text), Some(&b"cni_hostport"[..]));
        assert_eq!(number(handle.unwrap()).unwrap(), 42);
        assert_eq!(missing, None);
        assert_eq!(exprs.map(|e| parse(e).unwrap().len()), Some(1));
        assert!(find(&a.buf[..a.buf.len() - 1], [1]).is_err());
    }

    #[test]
    fn an_attribute_too_long_for_its_length_field_is_flagged_not_wrapped() {
        let mut attrs = Attrs::default();
        attrs.bytes(1, &[0; 65531]);
        assert!(!attrs.overflow, "65535 bytes with the header fit");
        attrs.bytes(1, &[0; 65532]);
        assert!(attrs.overflow);
    }

    #[test]
    fn attributes_are_padded_and_nested_ones_flagged() {
        let mut attrs = Attrs::default();
        attrs.str(1, "t");
        attrs.nested(4, |inner| inner.u32(2, 0x10));
        assert_eq!(
            attrs.buf,
            [6, 0, 1, 0, b't', 0, 0, 0, 12, 0, 4, 0x80, 8, 0, 2, 0, 0, 0, 0, 0x10]
        );
        let parsed = parse(&attrs.buf).unwrap();
        assert_eq!(parsed[0], (1, &b"t\0"[..]));
        assert_eq!(string(parsed[0].1).unwrap(), "t");
        assert_eq!(parsed[1].0, 4);
        assert_eq!(number(parse(parsed[1].1).unwrap()[0].1).unwrap(), 0x10);
    }
}
