//! `etcd_answer`: one answer body of etcd's JSON gateway as the etcd
//! store reads it (`cni_ipam::fuzzing::etcd`), and the block names of the
//! keys it lists.
//!
//! Input: the body's bytes. Checked:
//! - nothing panics, whatever the bytes (a body that is not an answer is
//!   read as none);
//! - what is read is bounded by the body: the keys and values decoded
//!   from base64 are no longer than the body, and there are no more
//!   responses and pairs than it has bytes;
//! - a key that names a block (`<address>-<length>`) names it as the
//!   store writes it: reading the name it is written under gives the same
//!   name.

use cni_ipam::fuzzing::etcd;

/// The target's name and corpus directory.
pub const TARGET: &str = "etcd_answer";

/// Words of the format for the mutation runs.
pub const TOKENS: [&[u8]; 6] = [
    br#"{"header":{"revision":"7"},"#,
    br#""succeeded":true,"#,
    br#""responses":[{"response_range":{"kvs":[{"key":"YQ==","value":"Yg=="}],"count":"1"}}]"#,
    br#""count":"18446744073709551615""#,
    b"MTAuMS4yLjY0LTI2",
    b"}",
];

/// The fuzz target: panics naming the violated invariant.
pub fn fuzz(data: &[u8]) {
    if let Err(why) = check(data) {
        super::fail(TARGET, data, why);
    }
}

/// The invariants above, for one body.
pub fn check(data: &[u8]) -> Result<(), String> {
    let read = etcd::answer(data);
    let pairs: usize = read.responses.iter().map(|r| r.kvs.len()).sum();
    if read.responses.len() + pairs > data.len() {
        return Err(format!(
            "{} responses and {pairs} pairs from {} bytes",
            read.responses.len(),
            data.len()
        ));
    }
    for (key, value) in read.responses.iter().flat_map(|r| &r.kvs) {
        if key.len() + value.len() > data.len() {
            return Err(format!(
                "a pair of {} bytes from {}",
                key.len() + value.len(),
                data.len()
            ));
        }
        let name = key.rsplit('/').next().unwrap_or(key);
        for (v4, v6) in [(26, 122), (24, 120)] {
            if let Ok(written) = etcd::block_name(name, v4, v6) {
                match etcd::block_name(&written, v4, v6) {
                    Ok(again) if again == written => {}
                    other => {
                        return Err(format!(
                            "block {name:?} written as {written:?} reads as {other:?}"
                        ))
                    }
                }
            }
        }
    }
    Ok(())
}

/// Seeds: answers as etcd 3.4's gateway gives them (a range, a
/// transaction that held with a range and a put, one that did not).
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    let header = r#""header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"12","raft_term":"2"}"#;
    let kv = |k: &str, v: &str| {
        format!(
            r#"{{"key":"{}","create_revision":"5","mod_revision":"5","version":"1","value":"{}"}}"#,
            b64(k),
            b64(v)
        )
    };
    let range = format!(
        r#"{{{header},"kvs":[{},{}],"count":"2"}}"#,
        kv("/cni/net/nodes/n1/blocks/10.1.2.64-26", ""),
        kv("/cni/net/blocks/10.1.2.64-26/10.1.2.65", "c1\neth0\nn1")
    );
    let held = format!(
        r#"{{{header},"succeeded":true,"responses":[{{"response_range":{{{header},"kvs":[{}],"count":"1"}}}},{{"response_put":{{{header}}}}}]}}"#,
        kv("/cni/net/owners/10.1.2.64-26", "n1")
    );
    let failed = format!(r#"{{{header},"responses":[{{"response_range":{{{header}}}}}]}}"#);
    vec![
        ("seed-range".into(), range.into_bytes()),
        ("seed-txn-succeeded".into(), held.into_bytes()),
        ("seed-txn-failed".into(), failed.into_bytes()),
    ]
}
