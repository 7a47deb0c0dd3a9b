//! Go's `encoding/gob`, as much of it as the `dhcp` plugin and its daemon
//! exchange: the reference's two halves talk `net/rpc`, whose messages
//! are gob streams.
//!
//! A gob stream is a sequence of messages, each a length and then either a
//! type definition (a negative type id and a `wireType`) or a value (a
//! positive type id and the value's fields). [`Decoder`] reads any value
//! whose types it is told on the stream into a [`Value`] tree, which is
//! how the daemon also skips what it does not need; [`Encoder`] writes a
//! [`Value`] of a type described by a [`StructType`], sending each type's
//! definition once per stream, in the order and with the ids a fresh Go
//! process gives them, so its bytes are those of Go's encoder.
//!
//! What a peer sends is bounded: a message is at most [`MAX_MESSAGE`]
//! bytes, a value nests at most [`MAX_DEPTH`] deep, a stream defines at
//! most [`MAX_TYPES`] types, and no count can claim more items than the
//! bytes left in its message.
//!
//! Interfaces (values of Go's `interface{}` type) are not read: none of
//! the types exchanged holds one, and a stream holding one is refused.
//!
//! Go: `encoding/gob` (`encoder.go`, `decoder.go`, `type.go`).

mod decode;
mod encode;
mod wire;

pub use decode::Decoder;
pub use encode::{Encoder, Field, StructType, Type};

/// The largest gob message either side reads (Go's own bound is 1 GiB;
/// the largest call here carries one network configuration).
pub const MAX_MESSAGE: u64 = 1 << 20;

/// How deep a value may nest (structs in slices in structs ...).
pub const MAX_DEPTH: usize = 32;

/// How many types one stream may define.
pub const MAX_TYPES: usize = 128;

/// A value read from, or to be written to, a gob stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// Any signed integer (`int`, `int32` ...).
    Int(i64),
    /// Any unsigned integer.
    Uint(u64),
    /// `float32` or `float64`.
    Float(f64),
    /// `complex64` or `complex128`: real and imaginary parts.
    Complex(f64, f64),
    /// `[]byte`, or what a `GobEncoder`, `BinaryMarshaler` or
    /// `TextMarshaler` wrote.
    Bytes(Vec<u8>),
    /// `string`.
    String(String),
    /// A slice or an array.
    List(Vec<Value>),
    /// A map, its entries in stream order.
    Map(Vec<(Value, Value)>),
    /// A struct: the fields that were sent (gob omits zero values), by
    /// name, in field order.
    Struct(Vec<(String, Value)>),
}

impl Value {
    /// A struct's field named `name`, when it was sent.
    ///
    /// ```
    /// use cni_dhcp::gob::Value;
    /// let v = Value::Struct(vec![("Seq".into(), Value::Uint(3))]);
    /// assert_eq!(v.field("Seq"), Some(&Value::Uint(3)));
    /// assert_eq!(v.field("ServiceMethod"), None);
    /// ```
    pub fn field(&self, name: &str) -> Option<&Value> {
        match self {
            Value::Struct(fields) => fields.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a string, or of bytes that are UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            Value::Bytes(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// The bytes of a `[]byte`, a marshaled value or a string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            Value::String(s) => Some(s.as_bytes()),
            _ => None,
        }
    }

    /// A signed or unsigned integer that fits in an `i64`.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Uint(u) => i64::try_from(*u).ok(),
            _ => None,
        }
    }

    /// The items of a slice or an array.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }

    /// A struct's field `name` as text; absent (a zero value) is empty.
    pub fn text_field(&self, name: &str) -> &str {
        self.field(name).and_then(Value::as_str).unwrap_or_default()
    }
}

/// Why a gob stream could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum GobError {
    /// The stream ended before a message began: the peer is done.
    #[error("end of stream")]
    Eof,
    /// Reading or writing the stream failed.
    #[error("gob stream: {0}")]
    Io(#[from] std::io::Error),
    /// A message ends in the middle of a value.
    #[error("gob: message truncated")]
    Truncated,
    /// An integer's length byte says more than eight bytes.
    #[error("gob: malformed integer (length byte {0:#04x})")]
    BadInteger(u8),
    /// A message is longer than [`MAX_MESSAGE`].
    #[error("gob: message of {0} bytes, more than the {MAX_MESSAGE} allowed")]
    TooLong(u64),
    /// A count claims more items than bytes are left.
    #[error("gob: a count of {0} items exceeds the message")]
    TooMany(u64),
    /// A value nests deeper than [`MAX_DEPTH`].
    #[error("gob: value nested more than {MAX_DEPTH} deep")]
    TooDeep,
    /// A stream defines more than [`MAX_TYPES`] types.
    #[error("gob: more than {MAX_TYPES} types defined on one stream")]
    TooManyTypes,
    /// A value of a type never defined on the stream.
    #[error("gob: unknown type id {0}")]
    UnknownType(i64),
    /// A definition's id is a predefined one, or defined twice.
    #[error("gob: bad or duplicate type id {0} in a definition")]
    BadTypeId(i64),
    /// A struct value names a field its type does not have.
    #[error("gob: field {index} out of range in a value of type {ty:?}")]
    BadField {
        /// The struct type's name.
        ty: String,
        /// The field's index.
        index: u64,
    },
    /// A kind of value this implementation does not read.
    #[error("gob: {0} values are not supported")]
    Unsupported(&'static str),
    /// A string is not UTF-8.
    #[error("gob: a string is not UTF-8")]
    NotUtf8,
    /// Bytes are left after a complete value.
    #[error("gob: {0} bytes left after the value")]
    ExtraData(usize),
    /// A value does not have the shape of the type it is written as.
    #[error("gob: cannot write {found} as {wanted} (field {field})")]
    Mismatch {
        /// The field (or type) being written.
        field: String,
        /// The type's kind.
        wanted: &'static str,
        /// The value's kind.
        found: &'static str,
    },
}

impl Value {
    /// The kind of the value, for errors.
    fn kind(&self) -> &'static str {
        match self {
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Uint(_) => "uint",
            Value::Float(_) => "float",
            Value::Complex(..) => "complex",
            Value::Bytes(_) => "bytes",
            Value::String(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Struct(_) => "struct",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wire::{put_bytes, put_int, put_uint};
    use super::*;

    /// A message: its length, then `body`.
    fn framed(body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_bytes(&mut out, body);
        out
    }

    /// The definition of type `id`: a slice of `elem`.
    fn slice_definition(id: i64, elem: i64) -> Vec<u8> {
        let mut m = Vec::new();
        put_int(&mut m, -id);
        put_uint(&mut m, 2); // SliceT
        put_uint(&mut m, 1); // CommonType
        put_uint(&mut m, 2); // its Id
        put_int(&mut m, id);
        m.push(0);
        put_uint(&mut m, 1); // Elem
        put_int(&mut m, elem);
        m.extend([0, 0]);
        framed(&m)
    }

    #[test]
    fn a_message_longer_than_the_bound_is_refused_before_it_is_read() {
        let mut stream = Vec::new();
        put_uint(&mut stream, MAX_MESSAGE + 1);
        let err = Decoder::new().decode(&mut stream.as_slice()).unwrap_err();
        assert!(matches!(err, GobError::TooLong(_)), "{err}");
    }

    #[test]
    fn a_value_nested_deeper_than_the_bound_is_refused() {
        // Type 65 is a slice of itself: [[[[...]]]], 40 deep.
        let mut stream = slice_definition(65, 65);
        let mut value = Vec::new();
        put_int(&mut value, 65);
        value.push(0); // a slice is not a struct: field 0
        value.extend(std::iter::repeat_n(1u8, 40));
        value.push(0);
        stream.extend(framed(&value));
        let err = Decoder::new().decode(&mut stream.as_slice()).unwrap_err();
        assert!(matches!(err, GobError::TooDeep), "{err}");
    }

    #[test]
    fn a_stream_may_not_define_types_without_end_or_redefine_one() {
        let mut stream = Vec::new();
        for id in 65..(65 + MAX_TYPES as i64 + 1) {
            stream.extend(slice_definition(id, 6));
        }
        let err = Decoder::new().decode(&mut stream.as_slice()).unwrap_err();
        assert!(matches!(err, GobError::TooManyTypes), "{err}");
        let mut twice = slice_definition(65, 6);
        twice.extend(slice_definition(65, 6));
        let err = Decoder::new().decode(&mut twice.as_slice()).unwrap_err();
        assert!(matches!(err, GobError::BadTypeId(65)), "{err}");
        let err = Decoder::new()
            .decode(&mut slice_definition(8, 6).as_slice())
            .unwrap_err();
        assert!(matches!(err, GobError::BadTypeId(8)), "{err}");
    }

    #[test]
    fn a_value_of_an_undefined_type_or_a_count_past_the_message_is_refused() {
        let mut value = Vec::new();
        put_int(&mut value, 70);
        value.push(0);
        let err = Decoder::new()
            .decode(&mut framed(&value).as_slice())
            .unwrap_err();
        assert!(matches!(err, GobError::UnknownType(70)), "{err}");
        let mut stream = slice_definition(65, 6);
        let mut value = Vec::new();
        put_int(&mut value, 65);
        value.push(0);
        put_uint(&mut value, 1 << 40); // a billion strings, in a few bytes
        stream.extend(framed(&value));
        let err = Decoder::new().decode(&mut stream.as_slice()).unwrap_err();
        assert!(matches!(err, GobError::TooMany(_)), "{err}");
    }

    #[test]
    fn a_truncated_stream_is_an_error_and_an_empty_one_its_end() {
        let err = Decoder::new().decode(&mut [].as_slice()).unwrap_err();
        assert!(matches!(err, GobError::Eof), "{err}");
        let err = Decoder::new().decode(&mut [5u8, 1].as_slice()).unwrap_err();
        assert!(matches!(err, GobError::Io(_)), "{err}");
    }

    #[test]
    fn truncated_or_corrupted_streams_are_refused_without_panicking() {
        // Recorded from Go (see rpc/fixtures/README.md), after the HTTP head.
        for recorded in [
            &include_bytes!("../rpc/fixtures/v19-allocate.server")[..],
            &include_bytes!("../rpc/fixtures/v19-allocate.client")[..],
        ] {
            let start = recorded.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
            let gob = &recorded[start..];
            let read_all = |bytes: &[u8]| {
                let mut input = bytes;
                let mut decoder = Decoder::new();
                while decoder.decode(&mut input).is_ok() {}
            };
            for cut in 0..gob.len() {
                read_all(&gob[..cut]);
            }
            for at in 0..gob.len() {
                for bit in 0..8 {
                    let mut flipped = gob.to_vec();
                    flipped[at] ^= 1 << bit;
                    read_all(&flipped);
                }
            }
        }
    }
}
