//! `dhcp_message`: one DHCPv4 message as the client reads a server's
//! answer (`cni_dhcp::message::Message::decode`).
//!
//! Input: the UDP payload. Checked:
//! - nothing panics; a malformed message is an error, whatever the bytes;
//! - the options read fit in the message;
//! - a message that decodes, encoded again as the client encodes its own,
//!   decodes to the same message (fields, type and options in order);
//! - the typed reads of an option (`ipv4_option`, `seconds_option`) are
//!   its first four bytes, or nothing when it is shorter.

use std::net::Ipv4Addr;

use cni_dhcp::message::{code, Message, MessageType};

/// The target's name and corpus directory.
pub const TARGET: &str = "dhcp_message";

/// Words of the format for the mutation runs: the magic cookie, the
/// message type, a router, a classless route, the end.
pub const TOKENS: [&[u8]; 6] = [
    &[99, 130, 83, 99],
    &[53, 1, 5],
    &[3, 4, 198, 18, 7, 1],
    &[121, 8, 24, 198, 18, 8, 198, 18, 7, 1],
    &[51, 4, 0, 0, 14, 16],
    &[255],
];

/// The fuzz target: panics naming the violated invariant.
pub fn fuzz(data: &[u8]) {
    if let Err(why) = check(data) {
        super::fail(TARGET, data, why);
    }
}

/// The invariants above, for one message.
pub fn check(data: &[u8]) -> Result<(), String> {
    let Ok(message) = Message::decode(data) else {
        return Ok(());
    };
    let held: usize = message.options.iter().map(|(_, v)| 2 + v.len()).sum();
    if held > data.len() {
        return Err(format!("options of {held} bytes in {}", data.len()));
    }
    let again = message.encode();
    match Message::decode(&again) {
        Ok(back) if back == message => {}
        other => return Err(format!("{message:?} encoded again reads as {other:?}")),
    }
    for (c, _) in &message.options {
        let value = message.option(*c).unwrap_or_default();
        let first = value.first_chunk::<4>();
        if message.ipv4_option(*c) != first.map(|b| Ipv4Addr::from(*b))
            || message.seconds_option(*c) != first.map(|b| u32::from_be_bytes(*b))
        {
            return Err(format!("option {c} {value:?} read as typed disagrees"));
        }
    }
    Ok(())
}

/// Generated seeds: an offer and an ack as a server would send them
/// (the captured ones, dnsmasq's and udhcpc's, are in
/// `fuzz/corpus/dhcp_message/`).
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    [MessageType::Offer, MessageType::Ack, MessageType::Nak]
        .into_iter()
        .map(|kind| {
            let mut m = Message::client(kind, 0x1234_5678, [2, 0, 0, 0, 0, 1]);
            m.op = 2;
            m.yiaddr = Ipv4Addr::new(198, 18, 7, 45);
            m.set_option(code::SERVER_ID, vec![198, 18, 7, 1]);
            m.set_option(code::LEASE_TIME, 3600u32.to_be_bytes().to_vec());
            m.set_option(code::SUBNET_MASK, vec![255, 255, 255, 0]);
            m.set_option(code::ROUTER, vec![198, 18, 7, 1]);
            m.set_option(code::CLASSLESS_ROUTES, vec![24, 198, 18, 8, 198, 18, 7, 1]);
            m.set_option(code::STATIC_ROUTES, vec![198, 18, 9, 0, 198, 18, 7, 1]);
            (format!("seed-{kind:?}").to_lowercase(), m.encode())
        })
        .collect()
}
