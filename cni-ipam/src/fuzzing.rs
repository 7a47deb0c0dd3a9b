//! The parsers of bytes this crate reads from outside the process, as
//! entry points for fuzzing: the fuzz targets of `fuzz/` and the bounded
//! mutation runs of the tests crate (`tests/src/invariants/`) call them.
//! Behind the `fuzzing` feature (with `etcd`), which no plugin enables:
//! none of this is API a plugin uses, and each function is a thin call
//! into the code the etcd store runs.

/// What the etcd store reads of etcd's JSON gateway.
pub mod etcd {
    use crate::store::etcd::fuzzing as inner;

    /// One response of an answer: the keys and values of its range
    /// (base64-decoded) and its count.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct Response {
        /// The range's keys and values.
        pub kvs: Vec<(String, Vec<u8>)>,
        /// The range's count.
        pub count: u64,
    }

    /// One answer body as the store reads it.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct Read {
        /// The body is JSON with a `header` object: an etcd answer. A body
        /// whose `succeeded` or `responses` are not as etcd writes them
        /// (a key that is not base64, a count that is not a number) is
        /// refused, and read as none.
        pub is_answer: bool,
        /// `succeeded`, for a transaction's answer.
        pub succeeded: bool,
        /// The responses, in the order of the operations.
        pub responses: Vec<Response>,
    }

    /// Reads `body` as the store reads a `/v3/kv/txn` answer.
    pub fn answer(body: &[u8]) -> Read {
        inner::answer(body)
    }

    /// A key's block name (`10.1.2.64-26`) as the store reads it, for
    /// blocks of `v4` and `v6` prefix lengths: the name the block is
    /// written under again, or why it is not a block.
    pub fn block_name(name: &str, v4: u8, v6: u8) -> Result<String, crate::store::etcd::NotABlock> {
        inner::block_name(name, v4, v6)
    }
}
