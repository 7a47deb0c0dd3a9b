//! The D-Bus wire format, for the few messages this client exchanges: a
//! method call whose arguments are strings, and a reply whose first
//! argument is a string or a boolean.
//!
//! The D-Bus specification ("Message Format"): a 12-byte fixed header
//! (endianness, type, flags, version, body length, serial), an array of
//! header fields `a(yv)`, padding to 8 bytes, then the body. Every value is
//! aligned to its own size from the start of the message.
//!
//! Go: `github.com/godbus/dbus/v5` `message.go` and `encoder.go`/`decoder.go`,
//! which handle every signature; this handles the ones firewalld needs.

use super::FirewalldError;

/// The most this client reads of one message (header and body). The
/// specification allows 128 MiB; firewalld's and the bus's answers to our
/// calls are a few hundred bytes.
pub(crate) const MAX_MESSAGE: usize = 64 * 1024;

/// The fixed header and the length of the header field array: what must be
/// read before the message's total length is known.
pub(crate) const PREFIX_LEN: usize = 16;

/// "The message type. Unknown types must be ignored."
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// 1: `METHOD_CALL`.
    MethodCall,
    /// 2: `METHOD_RETURN`.
    MethodReturn,
    /// 3: `ERROR`.
    Error,
    /// 4: `SIGNAL`, or a type this client does not know.
    Other(u8),
}

impl Kind {
    fn from_byte(b: u8) -> Kind {
        match b {
            1 => Kind::MethodCall,
            2 => Kind::MethodReturn,
            3 => Kind::Error,
            other => Kind::Other(other),
        }
    }
}

/// Header field codes ("Header Fields" in the specification).
mod field {
    pub const PATH: u8 = 1;
    pub const INTERFACE: u8 = 2;
    pub const MEMBER: u8 = 3;
    pub const ERROR_NAME: u8 = 4;
    pub const REPLY_SERIAL: u8 = 5;
    pub const DESTINATION: u8 = 6;
    pub const SIGNATURE: u8 = 8;
}

/// A method call with string arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    /// The bus name it goes to: `org.fedoraproject.FirewallD1`.
    pub destination: &'a str,
    /// The object: `/org/fedoraproject/FirewallD1`.
    pub path: &'a str,
    /// The interface: `org.fedoraproject.FirewallD1.zone`.
    pub interface: &'a str,
    /// The method: `addSource`.
    pub member: &'a str,
    /// The arguments, each marshalled as `s`.
    pub args: &'a [&'a str],
}

impl Call<'_> {
    /// The whole message, little-endian, with this serial.
    ///
    /// An argument holding a NUL is refused ("must not contain the nul
    /// byte"): that is the only way a Rust string can be an invalid D-Bus
    /// string.
    pub(crate) fn encode(&self, serial: u32) -> Result<Vec<u8>, FirewalldError> {
        for arg in self.args {
            if arg.contains('\0') {
                return Err(FirewalldError::invalid(
                    "argument",
                    *arg,
                    "a D-Bus string cannot hold a NUL byte",
                ));
            }
        }
        let signature = "s".repeat(self.args.len());

        let mut body = Writer::default();
        for arg in self.args {
            body.string(arg);
        }

        let mut msg = Writer::default();
        msg.bytes(&[b'l', 1, 0, 1]);
        msg.u32(len_u32(body.buf.len())?);
        msg.u32(serial);
        let array_len_at = msg.buf.len();
        msg.u32(0);
        msg.pad(8);
        let array_start = msg.buf.len();
        msg.field_str(field::PATH, b'o', self.path);
        msg.field_str(field::INTERFACE, b's', self.interface);
        msg.field_str(field::MEMBER, b's', self.member);
        msg.field_str(field::DESTINATION, b's', self.destination);
        if !signature.is_empty() {
            msg.pad(8);
            msg.u8(field::SIGNATURE);
            msg.signature("g");
            msg.signature(&signature);
        }
        let array_len = len_u32(msg.buf.len() - array_start)?;
        msg.buf[array_len_at..array_len_at + 4].copy_from_slice(&array_len.to_le_bytes());
        msg.pad(8);
        msg.bytes(&body.buf);
        if msg.buf.len() > MAX_MESSAGE {
            return Err(FirewalldError::invalid(
                "arguments",
                format!("{} bytes", msg.buf.len()),
                format!("more than the {MAX_MESSAGE} bytes this client sends"),
            ));
        }
        Ok(msg.buf)
    }
}

fn len_u32(len: usize) -> Result<u32, FirewalldError> {
    u32::try_from(len).map_err(|_| {
        FirewalldError::invalid("arguments", format!("{len} bytes"), "too long for D-Bus")
    })
}

/// Little-endian marshalling; offsets count from the message's start.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn pad(&mut self, align: usize) {
        while self.buf.len() % align != 0 {
            self.buf.push(0);
        }
    }
    fn u8(&mut self, b: u8) {
        self.buf.push(b);
    }
    fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    fn u32(&mut self, v: u32) {
        self.pad(4);
        self.bytes(&v.to_le_bytes());
    }
    /// `s` or `o`: a u32 length, the bytes, a NUL. Callers check the
    /// length fits (the whole message is bounded by [`MAX_MESSAGE`]).
    fn string(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.bytes(s.as_bytes());
        self.u8(0);
    }
    /// `g`: a one-byte length, the bytes, a NUL. Only our own short
    /// signatures come here.
    fn signature(&mut self, s: &str) {
        self.u8(s.len() as u8);
        self.bytes(s.as_bytes());
        self.u8(0);
    }
    /// One `(yv)` header field holding a string or an object path.
    fn field_str(&mut self, code: u8, type_code: u8, value: &str) {
        self.pad(8);
        self.u8(code);
        self.u8(1);
        self.u8(type_code);
        self.u8(0);
        self.string(value);
    }
}

/// The total length of a message, from its first [`PREFIX_LEN`] bytes.
pub(crate) fn total_len(prefix: &[u8; PREFIX_LEN]) -> Result<usize, FirewalldError> {
    let big = endianness(prefix[0])?;
    let word = |at: usize| {
        let b = [prefix[at], prefix[at + 1], prefix[at + 2], prefix[at + 3]];
        if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    if prefix[3] != 1 {
        return Err(malformed(format!("protocol version {}", prefix[3])));
    }
    let fields = word(12) as usize;
    let body = word(4) as usize;
    let total = (PREFIX_LEN + fields)
        .next_multiple_of(8)
        .checked_add(body)
        .filter(|t| *t <= MAX_MESSAGE)
        .ok_or_else(|| {
            malformed(format!(
                "a message of {fields} header and {body} body bytes, more than {MAX_MESSAGE}"
            ))
        })?;
    Ok(total)
}

fn endianness(b: u8) -> Result<bool, FirewalldError> {
    match b {
        b'l' => Ok(false),
        b'B' => Ok(true),
        other => Err(malformed(format!("endianness byte {other:#04x}"))),
    }
}

fn malformed(reason: impl Into<String>) -> FirewalldError {
    FirewalldError::Malformed {
        reason: reason.into(),
    }
}

/// A message received, with what this client looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    /// Its type.
    pub kind: Kind,
    /// The serial of the call this answers (`REPLY_SERIAL`).
    pub reply_serial: Option<u32>,
    /// The error's name (`ERROR_NAME`), for an error.
    pub error_name: Option<String>,
    /// The body's signature (`SIGNATURE`; empty when absent).
    pub signature: String,
    /// The body, unparsed.
    body: Vec<u8>,
    /// Where the body starts within the message, for alignment.
    body_offset: usize,
    big_endian: bool,
}

impl Message {
    /// Parses one whole message (as long as [`total_len`] said).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Message, FirewalldError> {
        let mut r = Reader::new(bytes)?;
        r.pos = 1;
        let kind = Kind::from_byte(r.u8()?);
        r.pos = 4;
        let body_len = r.u32()? as usize;
        let _serial = r.u32()?;
        let fields_len = r.u32()? as usize;
        let fields_end = r.pos + fields_len;
        let (mut reply_serial, mut error_name, mut signature) = (None, None, String::new());
        while r.pos < fields_end {
            r.align(8)?;
            let code = r.u8()?;
            let sig = r.signature()?;
            match (code, sig.as_str()) {
                (field::REPLY_SERIAL, "u") => reply_serial = Some(r.u32()?),
                (field::ERROR_NAME, "s") => error_name = Some(r.string()?),
                (field::SIGNATURE, "g") => signature = r.signature()?,
                // Unknown or unused fields "must be ignored", whatever
                // their type.
                _ => r.skip(sig.as_bytes())?,
            }
        }
        if r.pos != fields_end {
            return Err(malformed("header fields overrun their array"));
        }
        r.align(8)?;
        let body_offset = r.pos;
        if bytes.len() - body_offset != body_len {
            return Err(malformed(format!(
                "body of {} bytes, header says {body_len}",
                bytes.len() - body_offset
            )));
        }
        Ok(Message {
            kind,
            reply_serial,
            error_name,
            signature,
            body: bytes[body_offset..].to_vec(),
            body_offset,
            big_endian: r.big,
        })
    }

    fn body_reader(&self) -> Reader<'_> {
        Reader {
            buf: &self.body,
            pos: 0,
            base: self.body_offset,
            big: self.big_endian,
        }
    }

    /// The first argument, when it is a string (a method's `s` answer, an
    /// error's message).
    pub(crate) fn first_string(&self) -> Option<String> {
        if !self.signature.starts_with('s') {
            return None;
        }
        self.body_reader().string().ok()
    }

    /// The first argument, when it is a boolean (`b`).
    pub(crate) fn first_bool(&self) -> Result<bool, FirewalldError> {
        if !self.signature.starts_with('b') {
            return Err(malformed(format!(
                "a reply of signature {:?} where a boolean was expected",
                self.signature
            )));
        }
        match self.body_reader().u32()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(malformed(format!("boolean value {other}"))),
        }
    }
}

/// Unmarshalling from a message; `base` is where `buf` starts within the
/// message, as alignment counts from there.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    big: bool,
}

/// How deep containers may nest in a value we skip ("The maximum depth of
/// container type nesting is 64" counts arrays and structs separately; one
/// bound for both is enough to stop a hostile message).
const MAX_DEPTH: usize = 64;

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Result<Reader<'a>, FirewalldError> {
        let big = endianness(*buf.first().ok_or_else(|| malformed("empty message"))?)?;
        Ok(Reader {
            buf,
            pos: 0,
            base: 0,
            big,
        })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FirewalldError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.buf.len())
            .ok_or_else(|| malformed("a value runs past the end of its message"))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn align(&mut self, n: usize) -> Result<(), FirewalldError> {
        let at = self.base + self.pos;
        let padding = at.next_multiple_of(n) - at;
        self.take(padding)?;
        Ok(())
    }

    fn u8(&mut self) -> Result<u8, FirewalldError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, FirewalldError> {
        self.align(4)?;
        let b = self.take(4)?;
        let b = [b[0], b[1], b[2], b[3]];
        Ok(if self.big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    fn text(&mut self, len: usize) -> Result<String, FirewalldError> {
        let bytes = self.take(len)?;
        if self.u8()? != 0 {
            return Err(malformed("a string not ended by NUL"));
        }
        String::from_utf8(bytes.to_vec()).map_err(|_| malformed("a string that is not UTF-8"))
    }

    fn string(&mut self) -> Result<String, FirewalldError> {
        let len = self.u32()? as usize;
        self.text(len)
    }

    fn signature(&mut self) -> Result<String, FirewalldError> {
        let len = self.u8()? as usize;
        self.text(len)
    }

    /// Skips one value of each complete type in `sig`.
    fn skip(&mut self, mut sig: &[u8]) -> Result<(), FirewalldError> {
        while !sig.is_empty() {
            sig = self.skip_one(sig, 0)?;
        }
        Ok(())
    }

    /// Skips one value of the first complete type in `sig`; returns the
    /// rest of the signature.
    fn skip_one<'s>(&mut self, sig: &'s [u8], depth: usize) -> Result<&'s [u8], FirewalldError> {
        if depth > MAX_DEPTH {
            return Err(malformed("values nested too deep"));
        }
        let (&code, rest) = sig
            .split_first()
            .ok_or_else(|| malformed("an incomplete signature"))?;
        match code {
            b'y' => {
                self.take(1)?;
            }
            b'n' | b'q' => {
                self.align(2)?;
                self.take(2)?;
            }
            b'b' | b'i' | b'u' | b'h' => {
                self.u32()?;
            }
            b'x' | b't' | b'd' => {
                self.align(8)?;
                self.take(8)?;
            }
            b's' | b'o' => {
                self.string()?;
            }
            b'g' => {
                self.signature()?;
            }
            b'v' => {
                let inner = self.signature()?;
                self.skip_one(inner.as_bytes(), depth + 1)?;
            }
            b'a' => {
                let len = self.u32()? as usize;
                let element = element_alignment(rest)?;
                self.align(element)?;
                self.take(len)?;
                return skip_type(rest);
            }
            b'(' | b'{' => {
                self.align(8)?;
                let close = if code == b'(' { b')' } else { b'}' };
                let mut inner = rest;
                loop {
                    match inner.first() {
                        Some(&c) if c == close => return Ok(&inner[1..]),
                        Some(_) => inner = self.skip_one(inner, depth + 1)?,
                        None => return Err(malformed("an unclosed struct in a signature")),
                    }
                }
            }
            other => {
                return Err(malformed(format!(
                    "type code {:?} in a signature",
                    other as char
                )))
            }
        }
        Ok(rest)
    }
}

/// The alignment of the first type in `sig`.
fn element_alignment(sig: &[u8]) -> Result<usize, FirewalldError> {
    match sig.first() {
        Some(b'y' | b'g' | b'v') => Ok(1),
        Some(b'n' | b'q') => Ok(2),
        Some(b'b' | b'i' | b'u' | b'h' | b's' | b'o' | b'a') => Ok(4),
        Some(b'x' | b't' | b'd' | b'(' | b'{') => Ok(8),
        _ => Err(malformed("an array without a valid element type")),
    }
}

/// The rest of `sig` after its first complete type (no value is read).
fn skip_type(sig: &[u8]) -> Result<&[u8], FirewalldError> {
    let mut depth = 0usize;
    for (i, &c) in sig.iter().enumerate() {
        match c {
            b'a' => continue,
            b'(' | b'{' => depth += 1,
            b')' | b'}' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| malformed("an unbalanced signature"))?
            }
            _ => {}
        }
        if depth == 0 {
            return Ok(&sig[i + 1..]);
        }
    }
    Err(malformed("an incomplete signature"))
}

/// A reply as a bus would send it (little-endian): `kind` 2 (return), 3
/// (error, named `x.Error`) or 4 (signal), answering `reply_serial`, with a
/// body already marshalled (it starts 8-aligned).
#[cfg(test)]
pub(crate) fn test_reply(kind: u8, reply_serial: u32, signature: &str, body: &[u8]) -> Vec<u8> {
    let mut w = Writer::default();
    w.bytes(&[b'l', kind, 1, 1]);
    w.u32(body.len() as u32);
    w.u32(1000 + reply_serial);
    let fields_at = w.buf.len();
    w.u32(0);
    let start = w.buf.len();
    w.pad(8);
    w.u8(field::REPLY_SERIAL);
    w.signature("u");
    w.u32(reply_serial);
    if kind == 3 {
        w.field_str(field::ERROR_NAME, b's', "x.Error");
    }
    if !signature.is_empty() {
        w.pad(8);
        w.u8(field::SIGNATURE);
        w.signature("g");
        w.signature(signature);
    }
    let len = (w.buf.len() - start) as u32;
    w.buf[fields_at..fields_at + 4].copy_from_slice(&len.to_le_bytes());
    w.pad(8);
    w.bytes(body);
    w.buf
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dbus-send --dest=org.freedesktop.DBus /org/freedesktop/DBus
    /// org.freedesktop.DBus.Hello`, byte for byte as the specification
    /// lays it out (checked by hand, field by field).
    #[rustfmt::skip]
    const HELLO: &[u8] = &[
        b'l', 1, 0, 1,  0, 0, 0, 0,  1, 0, 0, 0,  // LE, call, flags, v1; body 0; serial 1
        0x6d, 0, 0, 0,                            // header fields: 109 bytes
        1, 1, b'o', 0,  21, 0, 0, 0,              // PATH, "o", length 21
        b'/', b'o', b'r', b'g', b'/', b'f', b'r', b'e', b'e', b'd', b'e', b's', b'k', b't', b'o', b'p',
        b'/', b'D', b'B', b'u', b's', 0,  0, 0,   // NUL, pad to 8
        2, 1, b's', 0,  20, 0, 0, 0,              // INTERFACE, "s", length 20
        b'o', b'r', b'g', b'.', b'f', b'r', b'e', b'e', b'd', b'e', b's', b'k', b't', b'o', b'p',
        b'.', b'D', b'B', b'u', b's', 0,  0, 0, 0, // NUL, pad to 8
        3, 1, b's', 0,  5, 0, 0, 0,               // MEMBER, "s", length 5
        b'H', b'e', b'l', b'l', b'o', 0,  0, 0,   // NUL, pad to 8
        6, 1, b's', 0,  20, 0, 0, 0,              // DESTINATION, "s", length 20
        b'o', b'r', b'g', b'.', b'f', b'r', b'e', b'e', b'd', b'e', b's', b'k', b't', b'o', b'p',
        b'.', b'D', b'B', b'u', b's', 0,          // NUL; no padding after the last field...
        0, 0, 0,                                  // ...but the body starts at 8
    ];

    const BUS: Call<'static> = Call {
        destination: "org.freedesktop.DBus",
        path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus",
        member: "Hello",
        args: &[],
    };

    #[test]
    fn a_call_without_arguments_is_laid_out_as_the_specification_says() {
        assert_eq!(BUS.encode(1).unwrap(), HELLO);
    }

    #[test]
    fn string_arguments_get_a_signature_field_and_an_aligned_body() {
        let call = Call {
            member: "NameHasOwner",
            args: &["ab", "c"],
            ..BUS
        };
        let msg = call.encode(7).unwrap();
        // The body: "ab" (len 2, NUL), one pad byte to 4, "c" (len 1, NUL).
        let body: &[u8] = &[2, 0, 0, 0, b'a', b'b', 0, 0, 1, 0, 0, 0, b'c', 0];
        assert!(msg.ends_with(body), "{msg:?}");
        assert_eq!(&msg[4..8], &(body.len() as u32).to_le_bytes());
        assert_eq!(&msg[8..12], &7u32.to_le_bytes());
        // The SIGNATURE field: code 8, variant of "g" holding "ss".
        let sig_field: &[u8] = &[8, 1, b'g', 0, 2, b's', b's', 0];
        let at = msg
            .windows(sig_field.len())
            .position(|w| w == sig_field)
            .expect("a signature field");
        assert_eq!(at % 8, 0);
        assert_eq!((msg.len() - body.len()) % 8, 0);
        assert_eq!(total_len(msg[..16].try_into().unwrap()).unwrap(), msg.len());
    }

    #[test]
    fn an_argument_holding_nul_is_refused_before_sending() {
        let call = Call {
            args: &["trusted\0"],
            ..BUS
        };
        let err = call.encode(1).unwrap_err();
        assert!(err.to_string().contains("NUL"), "{err}");
    }

    /// A reply as dbus-daemon sends it: REPLY_SERIAL, DESTINATION, SENDER
    /// and SIGNATURE fields (SENDER and DESTINATION skipped), body "b".
    fn name_has_owner_reply(big: bool, value: u32) -> Vec<u8> {
        let w = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut m = vec![if big { b'B' } else { b'l' }, 2, 1, 1];
        m.extend(w(4)); // body length
        m.extend(w(3)); // serial
        let fields_at = m.len();
        m.extend(w(0));
        let start = m.len();
        m.extend([5, 1, b'u', 0]);
        m.extend(w(2)); // REPLY_SERIAL 2
        m.extend([6, 1, b's', 0]);
        m.extend(w(4));
        m.extend(b":1.9\0");
        m.extend([0, 0, 0]); // pad to 8
        m.extend([7, 1, b's', 0]);
        m.extend(w(20));
        m.extend(b"org.freedesktop.DBus\0");
        m.extend([0, 0, 0]); // pad to 8
        m.extend([8, 1, b'g', 0, 1, b'b', 0]);
        let len = (m.len() - start) as u32;
        m[fields_at..fields_at + 4].copy_from_slice(&w(len));
        m.push(0); // pad to 8
        m.extend(w(value));
        m
    }

    #[test]
    fn replies_are_read_in_either_byte_order() {
        for big in [false, true] {
            let bytes = name_has_owner_reply(big, 1);
            assert_eq!(
                total_len(bytes[..16].try_into().unwrap()).unwrap(),
                bytes.len()
            );
            let msg = Message::decode(&bytes).unwrap();
            assert_eq!(msg.kind, Kind::MethodReturn);
            assert_eq!(msg.reply_serial, Some(2));
            assert_eq!(msg.signature, "b");
            assert!(msg.first_bool().unwrap());
            assert_eq!(msg.first_string(), None);
        }
    }

    #[test]
    fn a_boolean_other_than_zero_or_one_is_malformed() {
        let msg = Message::decode(&name_has_owner_reply(false, 2)).unwrap();
        assert!(matches!(
            msg.first_bool(),
            Err(FirewalldError::Malformed { .. })
        ));
    }

    #[test]
    fn messages_longer_than_the_bound_are_refused_from_their_prefix() {
        let mut prefix = [0u8; PREFIX_LEN];
        prefix[..4].copy_from_slice(&[b'l', 2, 0, 1]);
        prefix[4..8].copy_from_slice(&(MAX_MESSAGE as u32).to_le_bytes());
        assert!(matches!(
            total_len(&prefix),
            Err(FirewalldError::Malformed { .. })
        ));
        prefix[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        prefix[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(total_len(&prefix).is_err());
    }

    #[test]
    fn an_error_reply_gives_its_name_and_message() {
        // ERROR_NAME "x.E", REPLY_SERIAL 9, SIGNATURE "s"; an unknown field
        // 200 of type a(iv) is skipped, as the specification asks.
        let mut m = vec![b'l', 3, 1, 1, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0];
        m.extend([4, 1, b's', 0, 3, 0, 0, 0, b'x', b'.', b'E', 0, 0, 0, 0, 0]);
        m.extend([5, 1, b'u', 0, 9, 0, 0, 0]);
        // a(iv) with one element (7, <y 5>): length 8 after padding to 8.
        m.extend([200, 5, b'a', b'(', b'i', b'v', b')', 0]);
        m.extend([8, 0, 0, 0, 0, 0, 0, 0]);
        m.extend([7, 0, 0, 0, 1, b'y', 0, 5]);
        m.extend([8, 1, b'g', 0, 1, b's', 0]);
        let fields = (m.len() - 16) as u32;
        m[12..16].copy_from_slice(&fields.to_le_bytes());
        m.push(0);
        let body = b"\x05\0\0\0oops!\0";
        m[4..8].copy_from_slice(&(body.len() as u32).to_le_bytes());
        m.extend(body);
        let msg = Message::decode(&m).unwrap();
        assert_eq!(msg.kind, Kind::Error);
        assert_eq!(msg.error_name.as_deref(), Some("x.E"));
        assert_eq!(msg.reply_serial, Some(9));
        assert_eq!(msg.first_string().as_deref(), Some("oops!"));
    }

    #[test]
    fn truncated_or_hostile_messages_are_errors_not_panics() {
        let good = name_has_owner_reply(false, 1);
        for cut in 0..good.len() {
            let _ = Message::decode(&good[..cut]);
        }
        let mut deep = vec![b'l', 2, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        deep.extend([9, 200]);
        deep.extend(std::iter::repeat_n(b'(', 200));
        deep.push(0);
        let fields = (deep.len() - 16) as u32;
        deep[12..16].copy_from_slice(&fields.to_le_bytes());
        assert!(Message::decode(&deep).is_err());
    }
}
