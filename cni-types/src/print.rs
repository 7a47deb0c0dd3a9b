//! Printing JSON the way the reference does.

use serde::Serialize;

/// Pretty JSON with four-space indents and a trailing newline.
pub(crate) fn pretty<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    // Our types serialize infallibly: plain structs of strings and numbers.
    if value.serialize(&mut ser).is_ok() {
        out.push(b'\n');
    }
    out
}
