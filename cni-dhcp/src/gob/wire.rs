//! Gob's numbers on the wire: unsigned integers in one byte below 128,
//! else a negated byte count and the big-endian bytes; signed integers
//! with their sign in the lowest bit; floats byte-reversed.
//!
//! Go: `encodeUint`, `encodeInt`, `decodeUintReader` (`encoding/gob`).

use super::GobError;

/// Appends `x` as gob writes an unsigned integer.
pub(super) fn put_uint(out: &mut Vec<u8>, x: u64) {
    if x < 0x80 {
        out.push(x as u8);
        return;
    }
    let bytes = x.to_be_bytes();
    let skip = (x.leading_zeros() / 8) as usize;
    // The count, negated, as one byte: 0xff for one byte ... 0xf8 for eight.
    out.push((256 - (8 - skip)) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

/// Appends `i` as gob writes a signed integer: the complement shifted for
/// negatives, bit 0 set.
pub(super) fn put_int(out: &mut Vec<u8>, i: i64) {
    let u = if i < 0 {
        (!(i as u64) << 1) | 1
    } else {
        (i as u64) << 1
    };
    put_uint(out, u);
}

/// Appends a length-prefixed byte string (gob's `[]byte` and `string`).
pub(super) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_uint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A cursor over one gob message; every read is bounds-checked.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }

    /// How many bytes are left.
    pub(super) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    fn byte(&mut self) -> Result<u8, GobError> {
        let (&b, rest) = self.bytes.split_first().ok_or(GobError::Truncated)?;
        self.bytes = rest;
        Ok(b)
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], GobError> {
        if n > self.bytes.len() {
            return Err(GobError::Truncated);
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    pub(super) fn uint(&mut self) -> Result<u64, GobError> {
        let b = self.byte()?;
        if b < 0x80 {
            return Ok(u64::from(b));
        }
        let n = 256 - usize::from(b);
        if n > 8 {
            return Err(GobError::BadInteger(b));
        }
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &d| (acc << 8) | u64::from(d)))
    }

    pub(super) fn int(&mut self) -> Result<i64, GobError> {
        let u = self.uint()?;
        Ok(if u & 1 == 1 {
            !(u >> 1) as i64
        } else {
            (u >> 1) as i64
        })
    }

    /// A count of items that follow, each at least one byte long: more
    /// than the bytes left is a lie, refused before anything is allocated.
    pub(super) fn count(&mut self) -> Result<usize, GobError> {
        let n = self.uint()?;
        if n > self.remaining() as u64 {
            return Err(GobError::TooMany(n));
        }
        Ok(n as usize)
    }

    pub(super) fn bytes(&mut self) -> Result<&'a [u8], GobError> {
        let n = self.count()?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uint(x: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_uint(&mut out, x);
        out
    }

    #[test]
    fn integers_are_written_as_the_gob_documentation_shows() {
        // The examples of encoding/gob's package documentation.
        assert_eq!(uint(7), [0x07]);
        assert_eq!(uint(256), [0xfe, 0x01, 0x00]);
        let mut out = Vec::new();
        put_int(&mut out, -129);
        assert_eq!(out, [0xfe, 0x01, 0x01]);
        // A type id of -65, as the first definition on a stream starts.
        let mut out = Vec::new();
        put_int(&mut out, -65);
        assert_eq!(out, [0xff, 0x81]);
    }

    #[test]
    fn integers_read_back_as_written() {
        for i in [0i64, 1, -1, 63, 64, -65, 1 << 40, i64::MIN, i64::MAX] {
            let mut out = Vec::new();
            put_int(&mut out, i);
            assert_eq!(Reader::new(&out).int().unwrap(), i);
        }
        assert_eq!(Reader::new(&uint(u64::MAX)).uint().unwrap(), u64::MAX);
    }

    #[test]
    fn a_count_larger_than_the_message_is_refused() {
        let out = uint(1 << 30);
        assert!(matches!(
            Reader::new(&out).count(),
            Err(GobError::TooMany(_))
        ));
        assert!(matches!(
            Reader::new(&[0xf7, 1]).uint(),
            Err(GobError::BadInteger(0xf7))
        ));
        assert!(matches!(
            Reader::new(&[0xfe, 1]).uint(),
            Err(GobError::Truncated)
        ));
    }
}
