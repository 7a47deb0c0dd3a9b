//! `nft_netlink`: one datagram as nf_tables answers a dump, a batch or a
//! generation request (`cni_netfilter::fuzzing::nft`, the code the
//! nftables backend reads every answer with).
//!
//! Input: the datagram's bytes. It is split into messages, and the whole
//! input and every message's payload are read as a listed table, chain or
//! rule, as attributes and as an acknowledgement. Checked:
//! - nothing panics, and an error is an error (a length that runs past
//!   the end, a short number, text that is not UTF-8), whatever the bytes;
//! - the messages fit in the datagram (16 bytes of header each, payloads
//!   within it), and each nf_tables message encoded again as the backend
//!   encodes its requests splits back to the same type, sequence number
//!   and payload;
//! - an `NLMSG_ERROR` payload has an errno exactly when it has 4 bytes
//!   that negate (the kernel sends `-errno`), and it is their negation;
//! - attributes that parse fit their payload, encode again to bytes that
//!   parse to the same attributes, and compare equal to themselves
//!   (`same_attrs`, what CHECK of `chain_holds` relies on);
//! - what a listing reads (table name, chain, handle, comment) was in the
//!   payload: no byte is invented, and a comment is at most libnftnl's 255
//!   bytes (lossy text aside).

use cni_netfilter::fuzzing::nft;

/// The target's name and corpus directory.
pub const TARGET: &str = "nft_netlink";

/// `nlmsg_type` of an acknowledgement or error.
const NLMSG_ERROR: u16 = 2;

/// Words of the format for the mutation runs: attribute headers of a
/// table name, a nested expression list, a userdata comment, a message
/// header of `NFT_MSG_NEWRULE`.
pub const TOKENS: [&[u8]; 6] = [
    &[8, 0, 1, 0, b'n', b'a', b't', 0],
    &[12, 0, 4, 0x80, 8, 0, 1, 0, b'c', b't', 0, 0],
    &[11, 0, 7, 0, 0, 4, b'a', b'b', b'c', 0, 0, 0],
    &[4, 0, 0, 0],
    &[20, 0, 0, 0, 6, 10, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    &[20, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
];

/// The fuzz target: panics naming the violated invariant.
pub fn fuzz(data: &[u8]) {
    if let Err(why) = check(data) {
        super::fail(TARGET, data, why);
    }
}

/// The invariants above, for one datagram.
pub fn check(data: &[u8]) -> Result<(), String> {
    check_payload(data)?;
    let Ok(messages) = nft::messages(data) else {
        return Ok(());
    };
    if messages.len() * 16 > data.len() {
        return Err(format!(
            "{} messages in a datagram of {} bytes",
            messages.len(),
            data.len()
        ));
    }
    for m in &messages {
        if m.payload.len() + 16 > data.len() {
            return Err(format!("a payload of {} bytes", m.payload.len()));
        }
        if m.kind >> 8 == 10 {
            let again = nft::encode_message(m.kind, m.seq, &m.payload);
            let back = nft::messages(&again).map_err(|e| format!("re-encoded: {e}"))?;
            if back != [m.clone()] {
                return Err(format!("{m:?} encoded again reads as {back:?}"));
            }
        }
        if m.kind == NLMSG_ERROR {
            let sent = m.payload.first_chunk::<4>().map(|c| i32::from_ne_bytes(*c));
            match (nft::error_code(&m.payload), sent) {
                (Ok(errno), Some(sent)) if sent.checked_neg() == Some(errno) => {}
                (Err(_), None | Some(i32::MIN)) => {}
                (read, _) => {
                    return Err(format!(
                        "an error payload {sent:?} of {} bytes read as {read:?}",
                        m.payload.len()
                    ))
                }
            }
        }
        check_payload(&m.payload)?;
    }
    Ok(())
}

/// The attribute and listing invariants for one payload.
fn check_payload(payload: &[u8]) -> Result<(), String> {
    if let Ok(attrs) = nft::attributes(payload) {
        let used: usize = attrs.iter().map(|(_, v)| 4 + v.len()).sum();
        if used > payload.len() {
            return Err(format!("attributes of {used} bytes in {}", payload.len()));
        }
        if let Some(again) = nft::encode_attributes(&attrs) {
            let back = nft::attributes(&again).map_err(|e| format!("re-encoded: {e}"))?;
            if back != attrs {
                return Err(format!("{attrs:?} encoded again reads as {back:?}"));
            }
            if !nft::same_attributes(&again, &again) {
                return Err(format!("{attrs:?} differs from itself"));
            }
        }
    }
    if let Ok(listed) = nft::listed(payload) {
        let found = |what: &str, bytes: &[u8]| {
            if super::contains(payload, bytes) {
                Ok(())
            } else {
                Err(format!("the {what} {bytes:?} is not in the payload"))
            }
        };
        if let Some(table) = &listed.table {
            found("table name", table.as_bytes())?;
        }
        if let Some(chain) = &listed.rule_chain {
            found("rule's chain", chain)?;
        }
        if let Some(chain) = &listed.chain {
            found("chain name", chain.as_bytes())?;
        }
        if let Some(comment) = &listed.comment {
            // Lossy text: each byte at most one U+FFFD (3 bytes).
            if comment.len() > 3 * 255 {
                return Err(format!("a comment of {} bytes", comment.len()));
            }
            if !comment.contains('\u{fffd}') {
                found("comment", comment.as_bytes())?;
            }
        }
        if listed.expressions.is_some_and(|n| n * 4 > payload.len()) {
            return Err(format!("{listed:?} from {} bytes", payload.len()));
        }
    }
    Ok(())
}

/// Generated seeds: messages as the backend encodes them, an
/// acknowledgement and a refusal (the captured ones are in
/// `fuzz/corpus/nft_netlink/`).
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let rule = nft::encode_attributes(&[
        (1, b"cni_hostport\0"),
        (2, b"hostports\0"),
        (3, &7u64.to_be_bytes()),
        (7, b"\x00\x0ccontainer-1\x00"),
    ])
    .unwrap_or_default();
    let mut newrule = nft::encode_message(0x0a06, 1, &rule);
    newrule.extend(nft::encode_message(0x0a06, 1, &rule));
    let mut ack = 16u32.wrapping_add(20).to_ne_bytes().to_vec();
    ack.extend(NLMSG_ERROR.to_ne_bytes());
    ack.extend([0; 10]);
    ack.extend(0i32.to_ne_bytes());
    ack.extend([0; 16]);
    let mut refused = ack.clone();
    refused[16..20].copy_from_slice(&(-2i32).to_ne_bytes());
    vec![
        ("seed-two-rules".into(), newrule),
        ("seed-ack".into(), ack),
        ("seed-enoent".into(), refused),
    ]
}
