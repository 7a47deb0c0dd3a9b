//! Writing a gob stream: the definitions of a value's types, once each,
//! then the value.
//!
//! Go: `gob.Encoder` (`encoder.go`, `encode.go`, `type.go`).

use std::io::Write;

use super::wire::{put_bytes, put_int, put_uint};
use super::{GobError, Value};

/// A Go type, as far as the values written here need: pointers are gob's
/// business only through what they point to, so they do not appear.
#[derive(Debug)]
pub enum Type {
    /// `bool`.
    Bool,
    /// `int` (any signed integer).
    Int,
    /// `uint64` (any unsigned integer).
    Uint,
    /// `[]byte`, or a named type whose underlying type it is: gob writes
    /// Go's `net.IP` and `net.IPMask` as their bytes (4 or 16).
    Bytes,
    /// `string`.
    String,
    /// A slice, named as Go names it (`"[]*types100.IPConfig"`), of
    /// elements of the type given.
    Slice(&'static str, &'static Type),
    /// A struct.
    Struct(&'static StructType),
}

/// A Go struct type: its name and its exported fields, in order.
#[derive(Debug)]
pub struct StructType {
    /// The name gob gives the type in its definition: its name without
    /// the package (`"CmdArgs"`), but empty for an unnamed struct
    /// (`struct{}`) and for one first reached through a pointer (the
    /// elements of a `[]*T`), as Go names a type by how it is reached.
    pub name: &'static str,
    /// The exported fields, in declaration order.
    pub fields: &'static [Field],
}

/// One field of a [`StructType`].
#[derive(Debug)]
pub struct Field {
    /// The field's Go name.
    pub name: &'static str,
    /// Its type.
    pub ty: Type,
}

/// Go's predefined ids of the basic types.
fn basic_id(ty: &Type) -> Option<i64> {
    match ty {
        Type::Bool => Some(1),
        Type::Int => Some(2),
        Type::Uint => Some(3),
        Type::Bytes => Some(5),
        Type::String => Some(6),
        _ => None,
    }
}

/// What tells two composite types apart: a struct's address (several
/// may be unnamed), a slice's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Struct(usize),
    Slice(&'static str),
    Basic,
}

fn key_of(ty: &Type) -> Key {
    match ty {
        Type::Struct(st) => Key::Struct(std::ptr::from_ref(*st) as usize),
        Type::Slice(name, _) => Key::Slice(name),
        _ => Key::Basic,
    }
}

/// The name a composite type's definition gives it.
fn name_of(ty: &Type) -> &'static str {
    match ty {
        Type::Slice(name, _) => name,
        Type::Struct(st) => st.name,
        _ => "",
    }
}

/// Writes one gob stream.
///
/// Go: `gob.Encoder`.
#[derive(Debug)]
pub struct Encoder {
    /// The ids given so far, by type, and whether the definition was
    /// sent.
    ids: Vec<(Key, i64, bool)>,
    next: i64,
}

impl Default for Encoder {
    fn default() -> Encoder {
        // Go: `firstUserId` is 64; the first type defined gets 65.
        Encoder {
            ids: Vec::new(),
            next: 65,
        }
    }
}

impl Encoder {
    /// An encoder for a new stream.
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// Writes `value`, a value of `ty`, to `out`: first the definition of
    /// each type not yet sent on this stream, each a message of its own,
    /// then the value's message.
    ///
    /// Go: `Encoder.Encode`.
    pub fn encode(
        &mut self,
        out: &mut impl Write,
        ty: &'static StructType,
        value: &Value,
    ) -> Result<(), GobError> {
        let ty = Type::Struct(ty);
        let mut messages = Vec::new();
        self.assign(&ty);
        self.define(&ty, &mut messages);
        let mut message = Vec::new();
        put_int(&mut message, self.id(&ty));
        encode_value(&mut message, &ty, value, name_of(&ty))?;
        messages.push(message);
        let mut bytes = Vec::new();
        for m in messages {
            put_bytes(&mut bytes, &m);
        }
        out.write_all(&bytes)?;
        Ok(())
    }

    fn id(&self, ty: &Type) -> i64 {
        basic_id(ty).unwrap_or_else(|| {
            let key = key_of(ty);
            self.ids
                .iter()
                .find(|(k, _, _)| *k == key)
                .map_or(0, |(_, id, _)| *id)
        })
    }

    /// Gives `ty` and the types it holds their ids, in Go's order: a
    /// struct before its fields, a slice after its element.
    ///
    /// Go: `newTypeObject`.
    fn assign(&mut self, ty: &Type) {
        if basic_id(ty).is_some() || self.id(ty) != 0 {
            return;
        }
        let give = |me: &mut Encoder| {
            me.ids.push((key_of(ty), me.next, false));
            me.next += 1;
        };
        match ty {
            Type::Struct(st) => {
                give(self);
                for f in st.fields {
                    self.assign(&f.ty);
                }
            }
            Type::Slice(_, elem) => {
                self.assign(elem);
                give(self);
            }
            _ => give(self),
        }
    }

    /// Appends the definition of `ty`, unless sent before, then those of
    /// the types it holds: Go's order.
    ///
    /// Go: `Encoder.sendActualType`.
    fn define(&mut self, ty: &Type, messages: &mut Vec<Vec<u8>>) {
        if basic_id(ty).is_some() {
            return;
        }
        let name = name_of(ty);
        let key = key_of(ty);
        let Some(entry) = self.ids.iter_mut().find(|(k, _, _)| *k == key) else {
            return;
        };
        if entry.2 {
            return;
        }
        entry.2 = true;
        let id = entry.1;
        let mut m = Vec::new();
        put_int(&mut m, -id);
        // wireType's fields SliceT and StructT: deltas 2 and 3.
        match ty {
            Type::Slice(_, elem) => {
                put_uint(&mut m, 2);
                common_type(&mut m, name, id);
                put_uint(&mut m, 1);
                put_int(&mut m, self.id(elem));
                m.push(0);
            }
            Type::Struct(st) => {
                put_uint(&mut m, 3);
                common_type(&mut m, name, id);
                if !st.fields.is_empty() {
                    put_uint(&mut m, 1);
                    put_uint(&mut m, st.fields.len() as u64);
                    for f in st.fields {
                        put_uint(&mut m, 1);
                        put_bytes(&mut m, f.name.as_bytes());
                        put_uint(&mut m, 1);
                        put_int(&mut m, self.id(&f.ty));
                        m.push(0);
                    }
                }
                m.push(0);
            }
            _ => return,
        }
        m.push(0);
        messages.push(m);
        match ty {
            Type::Struct(st) => {
                for f in st.fields {
                    self.define(&f.ty, messages);
                }
            }
            Type::Slice(_, elem) => self.define(elem, messages),
            _ => {}
        }
    }
}

/// A `CommonType` as the first field of a definition: its name (omitted
/// when empty) and id.
fn common_type(m: &mut Vec<u8>, name: &str, id: i64) {
    put_uint(m, 1);
    if name.is_empty() {
        put_uint(m, 2);
    } else {
        put_uint(m, 1);
        put_bytes(m, name.as_bytes());
        put_uint(m, 1);
    }
    put_int(m, id);
    m.push(0);
}

/// Whether gob leaves a field of this value out: zero numbers, false,
/// empty strings, bytes and slices. Structs are always sent.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::Int(i) => *i == 0,
        Value::Uint(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::Complex(r, i) => *r == 0.0 && *i == 0.0,
        Value::Bytes(b) => b.is_empty(),
        Value::String(s) => s.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Struct(_) => false,
    }
}

fn encode_value(out: &mut Vec<u8>, ty: &Type, value: &Value, field: &str) -> Result<(), GobError> {
    let mismatch = |wanted| GobError::Mismatch {
        field: field.to_string(),
        wanted,
        found: value.kind(),
    };
    match (ty, value) {
        (Type::Bool, Value::Bool(b)) => put_uint(out, u64::from(*b)),
        (Type::Int, Value::Int(i)) => put_int(out, *i),
        (Type::Uint, Value::Uint(u)) => put_uint(out, *u),
        (Type::Bytes, Value::Bytes(b)) => put_bytes(out, b),
        (Type::String, Value::String(s)) => put_bytes(out, s.as_bytes()),
        (Type::Slice(_, elem), Value::List(items)) => {
            put_uint(out, items.len() as u64);
            for item in items {
                encode_value(out, elem, item, field)?;
            }
        }
        (Type::Struct(st), Value::Struct(_)) => {
            let mut last: i64 = -1;
            for (i, f) in st.fields.iter().enumerate() {
                let Some(v) = value.field(f.name) else {
                    continue;
                };
                if is_zero(v) {
                    continue;
                }
                put_uint(out, (i as i64 - last) as u64);
                last = i as i64;
                encode_value(out, &f.ty, v, f.name)?;
            }
            out.push(0);
        }
        (Type::Bool, _) => return Err(mismatch("bool")),
        (Type::Int, _) => return Err(mismatch("int")),
        (Type::Uint, _) => return Err(mismatch("uint")),
        (Type::Bytes, _) => return Err(mismatch("bytes")),
        (Type::String, _) => return Err(mismatch("string")),
        (Type::Slice(..), _) => return Err(mismatch("slice")),
        (Type::Struct(_), _) => return Err(mismatch("struct")),
    }
    Ok(())
}
