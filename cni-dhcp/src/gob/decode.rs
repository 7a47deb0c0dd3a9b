//! Reading a gob stream: type definitions kept for the stream's life,
//! values read into [`Value`] trees.
//!
//! Go: `gob.Decoder` (`decoder.go`, `decode.go`).

use std::collections::HashMap;
use std::io::Read;

use super::wire::Reader;
use super::{GobError, Value, MAX_DEPTH, MAX_MESSAGE, MAX_TYPES};

/// The lowest id a stream may define; lower ones are Go's own.
///
/// Go: `firstUserId`.
const FIRST_USER_ID: i64 = 64;

/// A type as a definition on the stream describes it.
#[derive(Debug, Clone)]
enum WireType {
    Bool,
    Int,
    Uint,
    Float,
    Bytes,
    String,
    Complex,
    Interface,
    Array {
        elem: i64,
        len: i64,
    },
    Slice {
        elem: i64,
    },
    Struct {
        name: String,
        fields: Vec<(String, i64)>,
    },
    Map {
        key: i64,
        elem: i64,
    },
    /// A `GobEncoder`, `BinaryMarshaler` or `TextMarshaler`: bytes.
    Marshaled,
}

/// Go's predefined ids.
///
/// Go: `tBool` ... `tInterface` (`type.go`).
fn predefined(id: i64) -> Option<WireType> {
    Some(match id {
        1 => WireType::Bool,
        2 => WireType::Int,
        3 => WireType::Uint,
        4 => WireType::Float,
        5 => WireType::Bytes,
        6 => WireType::String,
        7 => WireType::Complex,
        8 => WireType::Interface,
        _ => return None,
    })
}

/// Reads the fields of one struct encoding, calling `field` with each
/// field's index; the fields' values are `field`'s to read.
fn walk_struct(
    r: &mut Reader<'_>,
    mut field: impl FnMut(u64, &mut Reader<'_>) -> Result<(), GobError>,
) -> Result<(), GobError> {
    let mut index: u64 = u64::MAX; // -1: the first delta is 1
    loop {
        let delta = r.uint()?;
        if delta == 0 {
            return Ok(());
        }
        index = index.wrapping_add(delta);
        field(index, r)?;
    }
}

/// Stores a field's value read by `read`.
fn set<T>(slot: &mut T, read: Result<T, GobError>) -> Result<(), GobError> {
    *slot = read?;
    Ok(())
}

fn string(r: &mut Reader<'_>) -> Result<String, GobError> {
    String::from_utf8(r.bytes()?.to_vec()).map_err(|_| GobError::NotUtf8)
}

/// A `CommonType`'s name (its id is the definition's).
fn common_type(r: &mut Reader<'_>) -> Result<String, GobError> {
    let mut name = String::new();
    walk_struct(r, |i, r| match i {
        0 => set(&mut name, string(r)),
        1 => r.int().map(drop),
        _ => Err(bad_field("CommonType", i)),
    })?;
    Ok(name)
}

fn bad_field(ty: &str, index: u64) -> GobError {
    GobError::BadField {
        ty: ty.to_string(),
        index,
    }
}

/// One `wireType`: which of its fields is set says the kind.
///
/// Go: `wireType` (`type.go`): ArrayT, SliceT, StructT, MapT,
/// GobEncoderT, BinaryMarshalerT, TextMarshalerT.
fn wire_type(r: &mut Reader<'_>) -> Result<WireType, GobError> {
    let mut out = None;
    walk_struct(r, |i, r| {
        out = Some(match i {
            0 => {
                let (mut elem, mut len) = (0, 0);
                walk_struct(r, |j, r| match j {
                    0 => common_type(r).map(drop),
                    1 => set(&mut elem, r.int()),
                    2 => set(&mut len, r.int()),
                    _ => Err(bad_field("arrayType", j)),
                })?;
                WireType::Array { elem, len }
            }
            1 => {
                let mut elem = 0;
                walk_struct(r, |j, r| match j {
                    0 => common_type(r).map(drop),
                    1 => set(&mut elem, r.int()),
                    _ => Err(bad_field("sliceType", j)),
                })?;
                WireType::Slice { elem }
            }
            2 => {
                let (mut name, mut fields) = (String::new(), Vec::new());
                walk_struct(r, |j, r| match j {
                    0 => set(&mut name, common_type(r)),
                    1 => {
                        for _ in 0..r.count()? {
                            let (mut field, mut id) = (String::new(), 0);
                            walk_struct(r, |k, r| match k {
                                0 => set(&mut field, string(r)),
                                1 => set(&mut id, r.int()),
                                _ => Err(bad_field("fieldType", k)),
                            })?;
                            fields.push((field, id));
                        }
                        Ok(())
                    }
                    _ => Err(bad_field("structType", j)),
                })?;
                WireType::Struct { name, fields }
            }
            3 => {
                let (mut key, mut elem) = (0, 0);
                walk_struct(r, |j, r| match j {
                    0 => common_type(r).map(drop),
                    1 => set(&mut key, r.int()),
                    2 => set(&mut elem, r.int()),
                    _ => Err(bad_field("mapType", j)),
                })?;
                WireType::Map { key, elem }
            }
            4..=6 => {
                walk_struct(r, |j, r| match j {
                    0 => common_type(r).map(drop),
                    _ => Err(bad_field("gobEncoderType", j)),
                })?;
                WireType::Marshaled
            }
            _ => return Err(bad_field("wireType", i)),
        });
        Ok(())
    })?;
    out.ok_or(GobError::Unsupported("empty type definition"))
}

/// Reads one gob stream: keeps the types it defines, returns its values.
///
/// Go: `gob.Decoder`.
#[derive(Debug, Default)]
pub struct Decoder {
    types: HashMap<i64, WireType>,
}

impl Decoder {
    /// A decoder for a new stream.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Reads messages from `input` until one holds a value, and returns
    /// it; type definitions on the way are kept. [`GobError::Eof`] when
    /// the stream ends before a message.
    ///
    /// Go: `Decoder.Decode`.
    pub fn decode(&mut self, input: &mut impl Read) -> Result<Value, GobError> {
        loop {
            let message = read_message(input)?;
            if let Some(value) = self.message(&message)? {
                return Ok(value);
            }
        }
    }

    /// Reads one message (without its length): a type definition, kept
    /// (`None`), or a value.
    pub fn message(&mut self, message: &[u8]) -> Result<Option<Value>, GobError> {
        let mut r = Reader::new(message);
        let id = r.int()?;
        let value = if id < 0 {
            let id = -id;
            if id < FIRST_USER_ID || self.types.contains_key(&id) {
                return Err(GobError::BadTypeId(id));
            }
            if self.types.len() >= MAX_TYPES {
                return Err(GobError::TooManyTypes);
            }
            let wire = wire_type(&mut r)?;
            self.types.insert(id, wire);
            None
        } else {
            // A struct is sent as it is; any other value as the only
            // field (number 0) of an implicit struct.
            if !matches!(self.wire(id)?, WireType::Struct { .. }) && r.uint()? != 0 {
                return Err(GobError::Unsupported(
                    "a non-struct value without its field 0",
                ));
            }
            Some(self.value(&mut r, id, 0)?)
        };
        match r.remaining() {
            0 => Ok(value),
            n => Err(GobError::ExtraData(n)),
        }
    }

    fn wire(&self, id: i64) -> Result<WireType, GobError> {
        predefined(id)
            .or_else(|| self.types.get(&id).cloned())
            .ok_or(GobError::UnknownType(id))
    }

    fn value(&self, r: &mut Reader<'_>, id: i64, depth: usize) -> Result<Value, GobError> {
        if depth > MAX_DEPTH {
            return Err(GobError::TooDeep);
        }
        let float = |r: &mut Reader<'_>| Ok::<_, GobError>(f64::from_bits(r.uint()?.swap_bytes()));
        Ok(match self.wire(id)? {
            WireType::Bool => Value::Bool(r.uint()? != 0),
            WireType::Int => Value::Int(r.int()?),
            WireType::Uint => Value::Uint(r.uint()?),
            WireType::Float => Value::Float(float(r)?),
            WireType::Complex => Value::Complex(float(r)?, float(r)?),
            WireType::Bytes | WireType::Marshaled => Value::Bytes(r.bytes()?.to_vec()),
            WireType::String => Value::String(string(r)?),
            WireType::Interface => return Err(GobError::Unsupported("interface")),
            WireType::Array { elem, len } => {
                let n = r.count()?;
                if n as i64 != len {
                    return Err(GobError::TooMany(n as u64));
                }
                self.list(r, elem, n, depth)?
            }
            WireType::Slice { elem } => {
                let n = r.count()?;
                self.list(r, elem, n, depth)?
            }
            WireType::Map { key, elem } => {
                let n = r.count()?;
                let mut entries = Vec::new();
                for _ in 0..n {
                    let k = self.value(r, key, depth + 1)?;
                    entries.push((k, self.value(r, elem, depth + 1)?));
                }
                Value::Map(entries)
            }
            WireType::Struct { name, fields } => {
                let mut out = Vec::new();
                walk_struct(r, |i, r| {
                    let (field, id) = usize::try_from(i)
                        .ok()
                        .and_then(|i| fields.get(i))
                        .ok_or_else(|| bad_field(&name, i))?;
                    out.push((field.clone(), self.value(r, *id, depth + 1)?));
                    Ok(())
                })?;
                Value::Struct(out)
            }
        })
    }

    fn list(
        &self,
        r: &mut Reader<'_>,
        elem: i64,
        n: usize,
        depth: usize,
    ) -> Result<Value, GobError> {
        let mut items = Vec::new();
        for _ in 0..n {
            items.push(self.value(r, elem, depth + 1)?);
        }
        Ok(Value::List(items))
    }
}

/// One message from `input`: its length (at most [`MAX_MESSAGE`]) then
/// that many bytes.
fn read_message(input: &mut impl Read) -> Result<Vec<u8>, GobError> {
    let mut first = [0u8; 1];
    if input.read(&mut first)? == 0 {
        return Err(GobError::Eof);
    }
    let len = if first[0] < 0x80 {
        u64::from(first[0])
    } else {
        let n = 256 - usize::from(first[0]);
        if n > 8 {
            return Err(GobError::BadInteger(first[0]));
        }
        let mut bytes = [0u8; 8];
        input.read_exact(&mut bytes[8 - n..])?;
        u64::from_be_bytes(bytes)
    };
    if len > MAX_MESSAGE {
        return Err(GobError::TooLong(len));
    }
    let mut message = vec![0u8; len as usize];
    input.read_exact(&mut message)?;
    Ok(message)
}
