//! `gob_stream`: a gob stream as the dhcp daemon reads a plugin's call
//! (and the plugin the daemon's answer): `cni_dhcp::gob::Decoder`.
//!
//! Input: the bytes of the stream. Checked:
//! - nothing panics; a malformed stream is an error, whatever the bytes;
//! - the values a stream gives are bounded by its bytes (every value takes
//!   at least a length and a type id) and nest at most `MAX_DEPTH` deep;
//! - decoding is deterministic: a new decoder reads the same values;
//! - a value read as the daemon reads `skel.CmdArgs`, written again as the
//!   plugin writes it, reads back as the same arguments.

use cni_dhcp::gob::{Decoder, Encoder, Value, MAX_DEPTH};
use cni_dhcp::rpc::{CmdArgs, CMD_ARGS};

/// The target's name and corpus directory.
pub const TARGET: &str = "gob_stream";

/// Words of the format for the mutation runs: a message length, a type
/// definition's start (type id -65), a struct's field delta, a string, a
/// large count.
pub const TOKENS: [&[u8]; 5] = [
    &[0x20],
    &[0xff, 0x81, 0x03, 0x01, 0x01],
    &[0x01, 0x04],
    &[0x06, b'I', b'f', b'N', b'a', b'm', b'e'],
    &[0xfc, 0x7f, 0xff, 0xff, 0xff],
];

/// The fuzz target: panics naming the violated invariant.
pub fn fuzz(data: &[u8]) {
    if let Err(why) = check(data) {
        super::fail(TARGET, data, why);
    }
}

/// The values of a stream until its first error.
fn values(data: &[u8]) -> Vec<Value> {
    let mut decoder = Decoder::new();
    let mut input = data;
    let mut out = Vec::new();
    while let Ok(value) = decoder.decode(&mut input) {
        out.push(value);
        if out.len() > data.len() {
            break;
        }
    }
    out
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Struct(fields) => 1 + fields.iter().map(|(_, f)| depth(f)).max().unwrap_or(0),
        Value::List(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Map(pairs) => {
            1 + pairs
                .iter()
                .map(|(k, v)| depth(k).max(depth(v)))
                .max()
                .unwrap_or(0)
        }
        _ => 0,
    }
}

/// The invariants above, for one stream.
pub fn check(data: &[u8]) -> Result<(), String> {
    let read = values(data);
    if read.len() * 2 > data.len() {
        return Err(format!("{} values from {} bytes", read.len(), data.len()));
    }
    if let Some(v) = read.iter().find(|v| depth(v) > MAX_DEPTH + 1) {
        return Err(format!("a value {} deep: {v:?}", depth(v)));
    }
    // Compared as text: a float may be NaN.
    if format!("{:?}", values(data)) != format!("{read:?}") {
        return Err("a second decoder read other values".into());
    }
    for value in &read {
        let args = CmdArgs::from_value(value);
        let mut bytes = Vec::new();
        Encoder::new()
            .encode(&mut bytes, &CMD_ARGS, &args.to_value())
            .map_err(|e| format!("{args:?} cannot be written again: {e}"))?;
        let back = Decoder::new()
            .decode(&mut bytes.as_slice())
            .map_err(|e| format!("{args:?} written again does not read: {e}"))?;
        if CmdArgs::from_value(&back) != args {
            return Err(format!("{args:?} written again reads as {back:?}"));
        }
    }
    Ok(())
}

/// Seeds: calls as the reference plugin sends them (one per command, the
/// types defined first) and the daemon's answers.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let args = CmdArgs {
        container_id: "c1".into(),
        netns: "/var/run/netns/c1".into(),
        ifname: "eth0".into(),
        args: "IgnoreUnknown=1".into(),
        path: "/opt/cni/bin".into(),
        netns_override: String::new(),
        stdin_data: br#"{"cniVersion":"1.0.0","name":"n","ipam":{"type":"dhcp"}}"#.to_vec(),
    };
    let mut out = Vec::new();
    let mut bytes = Vec::new();
    let mut encoder = Encoder::new();
    for _ in 0..2 {
        // The second value on the stream comes without the type's definition.
        encoder
            .encode(&mut bytes, &CMD_ARGS, &args.to_value())
            .expect("the seed's arguments are a CmdArgs");
        out.push((format!("seed-cmdargs-{}", out.len()), bytes.clone()));
    }
    out
}
