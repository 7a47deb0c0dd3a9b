//! `dbus_reply`: one D-Bus message as the firewalld client reads a reply
//! (`cni_netfilter::fuzzing::dbus`, the code of
//! `cni_netfilter::firewalld`'s connection).
//!
//! Input: the message's bytes, as read after its first 16 bytes gave its
//! length. Checked:
//! - nothing panics; a malformed message is an error, whatever the bytes;
//! - the length from the prefix is bounded (at most the client's 64 KiB)
//!   and agrees with a message that decodes: a message decodes only whole,
//!   as long as its header says;
//! - a first string is read only from a body of signature `s...`, a first
//!   boolean only from `b...`, and the error name and first string are
//!   text of the message;
//! - a string the client read, sent back as the argument of a call as the
//!   client encodes it, decodes to the same string.

use cni_netfilter::fuzzing::dbus;

/// The target's name and corpus directory.
pub const TARGET: &str = "dbus_reply";

/// Words of the format for the mutation runs: header fields (reply
/// serial, error name, signature) and bodies.
pub const TOKENS: [&[u8]; 6] = [
    &[5, 1, b'u', 0, 1, 0, 0, 0],
    &[4, 1, b's', 0, 3, 0, 0, 0, b'x', b'.', b'E', 0],
    &[8, 1, b'g', 0, 1, b's', 0, 0],
    &[8, 1, b'g', 0, 4, b'a', b'(', b'v', b')', 0],
    &[1, 0, 0, 0],
    &[0xff, 0xff, 0xff, 0x7f],
];

/// The fuzz target: panics naming the violated invariant.
pub fn fuzz(data: &[u8]) {
    if let Err(why) = check(data) {
        super::fail(TARGET, data, why);
    }
}

/// The invariants above, for one message.
pub fn check(data: &[u8]) -> Result<(), String> {
    let total = data
        .first_chunk::<{ dbus::PREFIX_LEN }>()
        .map(dbus::total_len);
    if let Some(Ok(total)) = total {
        if !(dbus::PREFIX_LEN..=dbus::MAX_MESSAGE).contains(&total) {
            return Err(format!("a total length of {total}"));
        }
    }
    let Ok(reply) = dbus::decode(data) else {
        return Ok(());
    };
    // The client reads exactly `total_len` bytes and decodes them; a
    // protocol version other than 1 is refused there, before decoding.
    if data.len() <= dbus::MAX_MESSAGE && data.get(3) == Some(&1) {
        match total {
            Some(Ok(t)) if t == data.len() => {}
            other => {
                return Err(format!(
                    "a message of {} bytes decodes, but its prefix says {other:?}",
                    data.len()
                ))
            }
        }
    }
    if reply.first_string.is_some() && !reply.signature.starts_with('s') {
        return Err(format!(
            "a first string from signature {:?}",
            reply.signature
        ));
    }
    if reply.first_bool.is_ok() && !reply.signature.starts_with('b') {
        return Err(format!(
            "a first boolean from signature {:?}",
            reply.signature
        ));
    }
    for text in [&reply.error_name, &reply.first_string]
        .into_iter()
        .flatten()
    {
        if !super::contains(data, text.as_bytes()) {
            return Err(format!("{text:?} is not in the message"));
        }
    }
    if let Some(text) = &reply.first_string {
        let call = dbus::encode_call(
            "org.fedoraproject.FirewallD1",
            "/org/fedoraproject/FirewallD1",
            "org.fedoraproject.FirewallD1.zone",
            "addSource",
            &[text],
            7,
        );
        if let Ok(call) = call {
            let back = dbus::decode(&call).map_err(|e| format!("our own call: {e}"))?;
            if back.kind != 1 || back.signature != "s" || back.first_string.as_ref() != Some(text) {
                return Err(format!("a call with {text:?} decodes as {back:?}"));
            }
        }
    }
    Ok(())
}

/// Generated seeds: calls as the client encodes them (the captured
/// replies are in `fuzz/corpus/dbus_reply/`).
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let calls: [(&str, &[&str]); 3] = [
        ("Hello", &[]),
        ("getZoneOfSource", &["10.88.0.5/32"]),
        ("addSource", &["trusted", "fd00::5/128"]),
    ];
    for (member, args) in calls {
        if let Ok(call) = dbus::encode_call(
            "org.fedoraproject.FirewallD1",
            "/org/fedoraproject/FirewallD1",
            "org.fedoraproject.FirewallD1.zone",
            member,
            args,
            3,
        ) {
            out.push((format!("seed-call-{member}"), call));
        }
    }
    out
}
