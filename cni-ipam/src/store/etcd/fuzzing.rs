//! The store's readers of etcd's answers, for `crate::fuzzing`.

use serde_json::Value;

use super::blocks::{Block, Sizes};
use super::client::{count, kvs, responses, succeeded};
use crate::fuzzing::etcd::{Read, Response};

/// See `crate::fuzzing::etcd::answer`.
pub fn answer(body: &[u8]) -> Read {
    let Ok(answer) = serde_json::from_slice::<Value>(body) else {
        return Read::default();
    };
    Read {
        is_answer: answer.get("header").is_some_and(Value::is_object),
        succeeded: succeeded(&answer),
        responses: responses(&answer)
            .iter()
            .map(|r| Response {
                kvs: kvs(Some(r)),
                count: count(Some(r)),
            })
            .collect(),
    }
}

/// See `crate::fuzzing::etcd::block_name`.
pub fn block_name(name: &str, v4: u8, v6: u8) -> Result<String, String> {
    Block::parse(name, Sizes { v4, v6 }).map(|b| b.name())
}
