//! What the store asks etcd, typed: range reads ([`Read`]), the
//! comparisons ([`Compare`]) and operations ([`Op`]) of a transaction
//! ([`Txn`]), each written as the v3 JSON gateway's request in one place
//! (keys and values in base64).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use super::answer::Kind;

/// `text` in base64, as the gateway carries keys and values.
fn b64(text: &str) -> String {
    B64.encode(text)
}

/// The first key after every key under the prefix `key`.
pub(super) fn prefix_end(key: &str) -> Vec<u8> {
    let mut end = key.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// A transaction (`POST /v3/kv/txn`): if every comparison holds, the
/// `success` operations run, else the `failure` ones; atomically.
#[derive(Debug, Clone)]
pub(super) struct Txn {
    /// What must hold.
    pub(super) compare: Vec<Compare>,
    /// What runs when it does.
    pub(super) success: Vec<Op>,
    /// What runs when it does not.
    pub(super) failure: Vec<Op>,
}

impl Txn {
    /// `success` when `compare` holds, nothing otherwise.
    pub(super) fn new(compare: Vec<Compare>, success: Vec<Op>) -> Txn {
        Txn {
            compare,
            success,
            failure: Vec::new(),
        }
    }

    /// The request's body.
    pub(super) fn body(&self) -> Value {
        let list = |ops: &[Op]| ops.iter().map(Op::body).collect::<Vec<_>>();
        let compare: Vec<Value> = self.compare.iter().map(Compare::body).collect();
        json!({"compare": compare, "success": list(&self.success), "failure": list(&self.failure)})
    }
}

/// A comparison of a transaction.
#[derive(Debug, Clone)]
pub(super) enum Compare {
    /// The key does not exist (`create_revision == 0`).
    Absent(String),
    /// The key holds `value`.
    Holds {
        /// The key compared.
        key: String,
        /// The value it must hold.
        value: String,
    },
    /// No key lies under the prefix: a comparison over a range holds for
    /// every key in it, and one of `create_revision == 0` for none.
    NoneUnder(String),
}

impl Compare {
    /// The key `key` holds `value`.
    pub(super) fn holds(key: &str, value: &str) -> Compare {
        Compare::Holds {
            key: key.to_owned(),
            value: value.to_owned(),
        }
    }

    /// The comparison as the gateway reads it.
    fn body(&self) -> Value {
        match self {
            Compare::Absent(key) => {
                json!({"key": b64(key), "target": "CREATE", "result": "EQUAL",
                       "create_revision": "0"})
            }
            Compare::Holds { key, value } => {
                json!({"key": b64(key), "target": "VALUE", "result": "EQUAL", "value": b64(value)})
            }
            Compare::NoneUnder(prefix) => {
                json!({"key": b64(prefix), "range_end": B64.encode(prefix_end(prefix)),
                       "target": "CREATE", "result": "EQUAL", "create_revision": "0"})
            }
        }
    }
}

/// An operation of a transaction.
#[derive(Debug, Clone)]
pub(super) enum Op {
    /// A range read.
    Range(Read),
    /// Puts `value` at `key`.
    Put {
        /// The key written.
        key: String,
        /// Its new value.
        value: String,
    },
    /// Deletes the key.
    Delete(String),
    /// Deletes every key under the prefix.
    DeletePrefix(String),
}

impl Op {
    /// Puts `value` at `key`.
    pub(super) fn put(key: &str, value: &str) -> Op {
        Op::Put {
            key: key.to_owned(),
            value: value.to_owned(),
        }
    }

    /// Deletes the key `key`.
    pub(super) fn delete(key: &str) -> Op {
        Op::Delete(key.to_owned())
    }

    /// The kind of response etcd gives it.
    pub(super) fn kind(&self) -> Kind {
        match self {
            Op::Range(_) => Kind::Range,
            Op::Put { .. } => Kind::Put,
            Op::Delete(_) | Op::DeletePrefix(_) => Kind::Delete,
        }
    }

    /// The operation as the gateway reads it.
    fn body(&self) -> Value {
        match self {
            Op::Range(read) => json!({ "request_range": read.body() }),
            Op::Put { key, value } => {
                json!({"request_put": {"key": b64(key), "value": b64(value)}})
            }
            Op::Delete(key) => json!({"request_delete_range": {"key": b64(key)}}),
            Op::DeletePrefix(prefix) => {
                json!({"request_delete_range": {"key": b64(prefix),
                       "range_end": B64.encode(prefix_end(prefix))}})
            }
        }
    }
}

/// A range read, alone or as an operation of a transaction: one key, or
/// every key under a prefix; with values, keys only, or only their count;
/// linearizable unless marked serializable.
#[derive(Debug, Clone)]
pub(super) struct Read {
    key: String,
    prefix: bool,
    fetch: Fetch,
    serializable: bool,
}

/// What a [`Read`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetch {
    KeysAndValues,
    KeysOnly,
    CountOnly,
}

impl Read {
    /// The key `key`.
    pub(super) fn key(key: &str) -> Read {
        Read {
            key: key.to_owned(),
            prefix: false,
            fetch: Fetch::KeysAndValues,
            serializable: false,
        }
    }

    /// Every key under the prefix `key`.
    pub(super) fn prefix(key: &str) -> Read {
        Read {
            prefix: true,
            ..Read::key(key)
        }
    }

    /// Keys without their values.
    pub(super) fn keys_only(self) -> Read {
        Read {
            fetch: Fetch::KeysOnly,
            ..self
        }
    }

    /// Only how many keys there are (`count_only`).
    pub(super) fn count(self) -> Read {
        Read {
            fetch: Fetch::CountOnly,
            ..self
        }
    }

    /// From the member's own state when `serializable` (it may lag the
    /// cluster), else linearizable (through the leader).
    pub(super) fn serializable(self, serializable: bool) -> Read {
        Read {
            serializable,
            ..self
        }
    }

    /// The request's body, alone (`POST /v3/kv/range`) or in an
    /// operation.
    pub(super) fn body(&self) -> Value {
        let mut op = json!({"key": b64(&self.key), "serializable": self.serializable});
        if self.prefix {
            op["range_end"] = Value::String(B64.encode(prefix_end(&self.key)));
        }
        match self.fetch {
            Fetch::KeysAndValues => {}
            Fetch::KeysOnly => op["keys_only"] = Value::Bool(true),
            Fetch::CountOnly => op["count_only"] = Value::Bool(true),
        }
        op
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_transaction_is_written_as_the_gateway_reads_it() {
        let txn = Txn {
            compare: vec![
                Compare::Absent("/k".into()),
                Compare::holds("/o", "n1"),
                Compare::NoneUnder("/b/".into()),
            ],
            success: vec![
                Op::put("/k", "v"),
                Op::delete("/k"),
                Op::DeletePrefix("/b/".into()),
            ],
            failure: vec![Op::Range(Read::prefix("/b/").count().serializable(true))],
        };
        let want = json!({
            "compare": [
                {"key": "L2s=", "target": "CREATE", "result": "EQUAL", "create_revision": "0"},
                {"key": "L28=", "target": "VALUE", "result": "EQUAL", "value": "bjE="},
                {"key": "L2Iv", "range_end": "L2Iw", "target": "CREATE", "result": "EQUAL",
                 "create_revision": "0"},
            ],
            "success": [
                {"request_put": {"key": "L2s=", "value": "dg=="}},
                {"request_delete_range": {"key": "L2s="}},
                {"request_delete_range": {"key": "L2Iv", "range_end": "L2Iw"}},
            ],
            "failure": [
                {"request_range": {"key": "L2Iv", "range_end": "L2Iw", "serializable": true,
                                   "count_only": true}},
            ],
        });
        assert_eq!(txn.body(), want);
    }
}
