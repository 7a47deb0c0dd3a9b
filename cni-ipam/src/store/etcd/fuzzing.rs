//! The store's readers of etcd's answers, for `crate::fuzzing`.

use serde_json::Value;

use super::answer::{self, Response};
use super::blocks::{Block, Sizes};
use crate::fuzzing::etcd::{self as outer, Read};

/// See `crate::fuzzing::etcd::answer`.
pub fn answer(body: &[u8]) -> Read {
    let Ok(answer) = serde_json::from_slice::<Value>(body) else {
        return Read::default();
    };
    let Ok((succeeded, responses)) = answer::txn(&answer) else {
        return Read::default();
    };
    Read {
        is_answer: answer.get("header").is_some_and(Value::is_object),
        succeeded,
        responses: (responses.into_iter())
            .map(|r| match r {
                Response::Range(r) => outer::Response {
                    kvs: r.kvs,
                    count: r.count,
                },
                Response::Put | Response::Delete => outer::Response::default(),
            })
            .collect(),
    }
}

/// See `crate::fuzzing::etcd::block_name`.
pub fn block_name(name: &str, v4: u8, v6: u8) -> Result<String, super::NotABlock> {
    Block::parse(name, Sizes { v4, v6 }).map(|b| b.name())
}
