//! What etcd answers through its JSON gateway, decoded once: a range's
//! keys, values and count, a transaction's outcome and its operations'
//! responses. Keys and values come in base64; the gateway leaves out
//! empty lists, zero counts and false booleans. Anything else that is not
//! what etcd writes (a value that is not base64, a count that is not a
//! number, a response of no known kind) is refused, with what was wrong,
//! for the caller to name the endpoint and quote the answer.

use std::fmt;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{Map, Value};

/// A range's answer, alone (`/v3/kv/range`) or as a transaction's
/// response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Range {
    /// The keys read and their values (empty for keys only).
    pub(super) kvs: Vec<(String, Vec<u8>)>,
    /// How many keys the range holds (`count_only` reads only count).
    pub(super) count: u64,
    /// Whether more keys lie past a `limit`.
    pub(super) more: bool,
    /// The revision of the last change to a key read (`mod_revision`); 0
    /// when none was read.
    pub(super) newest: u64,
}

/// The response of one operation of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Response {
    /// Of a range read.
    Range(Range),
    /// Of a put.
    Put,
    /// Of a delete.
    Delete,
}

/// The kinds of operations and their responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `request_range`, `response_range`.
    Range,
    /// `request_put`, `response_put`.
    Put,
    /// `request_delete_range`, `response_delete_range`.
    Delete,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Range => "range",
            Kind::Put => "put",
            Kind::Delete => "delete_range",
        })
    }
}

/// How a transaction went, and where its answer came from (for
/// messages).
#[derive(Debug)]
pub(super) struct Outcome {
    /// Whether its comparisons held (then `success` ran, else `failure`).
    pub(super) succeeded: bool,
    /// The responses of the operations that ran, one each, in their order.
    pub(super) responses: Vec<Response>,
    /// The member that answered.
    pub(super) endpoint: String,
    /// The answer as text, at most `MAX_QUOTED` bytes and the size of
    /// the rest.
    pub(super) text: String,
}

impl Response {
    /// Its kind.
    pub(super) fn kind(&self) -> Kind {
        match self {
            Response::Range(_) => Kind::Range,
            Response::Put => Kind::Put,
            Response::Delete => Kind::Delete,
        }
    }

    /// The range read, when it is one's.
    pub(super) fn into_range(self) -> Option<Range> {
        match self {
            Response::Range(r) => Some(r),
            _ => None,
        }
    }

    /// One entry of a transaction's `responses`: an object naming its
    /// kind.
    fn decode(value: &Value) -> Result<Response, Malformed> {
        let object = value
            .as_object()
            .ok_or_else(|| Malformed::new("a response that is not an object", value))?;
        if let Some(range) = object.get("response_range") {
            return Range::decode(range).map(Response::Range);
        }
        if object.get("response_put").is_some_and(Value::is_object) {
            return Ok(Response::Put);
        }
        if object
            .get("response_delete_range")
            .is_some_and(Value::is_object)
        {
            return Ok(Response::Delete);
        }
        Err(Malformed::new("a response of no known kind", value))
    }
}

impl Range {
    /// A range's answer.
    pub(super) fn decode(value: &Value) -> Result<Range, Malformed> {
        let object = value
            .as_object()
            .ok_or_else(|| Malformed::new("a range that is not an object", value))?;
        let (kvs, newest) = match object.get("kvs") {
            None => (Vec::new(), 0),
            Some(Value::Array(list)) => {
                let kvs = list.iter().map(pair).collect::<Result<_, _>>()?;
                let mut newest = 0;
                for kv in list.iter().filter_map(Value::as_object) {
                    newest = newest.max(number(kv, "mod_revision")?);
                }
                (kvs, newest)
            }
            Some(other) => return Err(Malformed::new("kvs that are not a list", other)),
        };
        Ok(Range {
            kvs,
            count: number(object, "count")?,
            more: flag(object, "more")?,
            newest,
        })
    }
}

/// A transaction's answer: whether its comparisons held, and its
/// responses.
pub(super) fn txn(answer: &Value) -> Result<(bool, Vec<Response>), Malformed> {
    let object = answer
        .as_object()
        .ok_or_else(|| Malformed::new("an answer that is not an object", answer))?;
    let responses = match object.get("responses") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(Response::decode)
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(Malformed::new("responses that are not a list", other)),
    };
    Ok((flag(object, "succeeded")?, responses))
}

/// One key and its value, base64-decoded.
fn pair(kv: &Value) -> Result<(String, Vec<u8>), Malformed> {
    let object = kv
        .as_object()
        .ok_or_else(|| Malformed::new("a key-value that is not an object", kv))?;
    let key =
        bytes(object, "key")?.ok_or_else(|| Malformed::new("a key-value without a key", kv))?;
    let value = bytes(object, "value")?.unwrap_or_default();
    Ok((String::from_utf8_lossy(&key).into_owned(), value))
}

/// The base64 field `name`, if there.
fn bytes(object: &Map<String, Value>, name: &str) -> Result<Option<Vec<u8>>, Malformed> {
    let Some(field) = object.get(name) else {
        return Ok(None);
    };
    field
        .as_str()
        .and_then(|s| B64.decode(s).ok())
        .map(Some)
        .ok_or_else(|| Malformed::new(format!("a {name} that is not base64"), field))
}

/// The number field `name` (a string, as the gateway writes 64-bit
/// numbers, or a number); 0 when left out.
fn number(object: &Map<String, Value>, name: &str) -> Result<u64, Malformed> {
    let Some(field) = object.get(name) else {
        return Ok(0);
    };
    field
        .as_str()
        .and_then(|s| s.parse().ok())
        .or(field.as_u64())
        .ok_or_else(|| Malformed::new(format!("a {name} that is not a count"), field))
}

/// The boolean field `name`; false when left out.
fn flag(object: &Map<String, Value>, name: &str) -> Result<bool, Malformed> {
    match object.get(name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(Malformed::new(
            format!("a {name} that is not a boolean"),
            other,
        )),
    }
}

/// What in an answer is not as etcd's v3 JSON gateway writes it, and
/// the value that is not (its first 64 characters): said in the code 11
/// error naming the member.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} ({value})")]
pub(super) struct Malformed {
    what: String,
    value: String,
}

impl Malformed {
    fn new(what: impl Into<String>, value: &Value) -> Malformed {
        Malformed {
            what: what.into(),
            value: short(value),
        }
    }
}

/// `value` as text for a message, at most 64 characters of it.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(64) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_transaction_answer_reads_as_its_responses_in_order() {
        let answer = json!({"header": {"revision": "7"}, "succeeded": true, "responses": [
            {"response_range": {"header": {}, "kvs": [
                {"key": "YQ==", "value": "Yg==", "create_revision": "5", "mod_revision": "6"},
                {"key": "Yw==", "mod_revision": 4}], "count": "2", "more": true}},
            {"response_put": {"header": {}}},
            {"response_delete_range": {"header": {}, "deleted": "1"}},
            {"response_range": {"header": {}}},
        ]});
        let range = Range {
            kvs: vec![("a".into(), b"b".to_vec()), ("c".into(), Vec::new())],
            count: 2,
            more: true,
            newest: 6,
        };
        assert_eq!(
            txn(&answer),
            Ok((
                true,
                vec![
                    Response::Range(range),
                    Response::Put,
                    Response::Delete,
                    Response::Range(Range::default()),
                ]
            ))
        );
    }

    #[test]
    fn left_out_fields_are_the_gateways_defaults() {
        assert_eq!(
            txn(&json!({"header": {}})),
            Ok((false, Vec::new())),
            "no succeeded, no responses"
        );
        assert_eq!(
            Range::decode(&json!({"count": 3})),
            Ok(Range {
                count: 3,
                ..Range::default()
            })
        );
    }

    #[test]
    fn what_etcd_never_writes_is_refused_naming_it() {
        let refused = |answer: Value| txn(&answer).unwrap_err().to_string();
        assert!(refused(json!({"responses": {}})).contains("responses that are not a list"));
        assert!(refused(json!({"succeeded": "yes"})).contains("succeeded that is not a boolean"));
        assert!(refused(json!({"responses": [{"response_watch": {}}]})).contains("no known kind"));
        let range = |r: Value| refused(json!({"responses": [{"response_range": r}]}));
        assert!(range(json!({"kvs": [{"key": "%%"}]})).contains("key that is not base64"));
        assert!(range(json!({"kvs": [{"value": "YQ=="}]})).contains("without a key"));
        assert!(range(json!({"count": "-1"})).contains("count that is not a count"));
        assert!(range(json!({"kvs": "x"})).contains("kvs that are not a list"));
        let revision = json!({"kvs": [{"key": "YQ==", "mod_revision": "x"}]});
        assert!(range(revision).contains("mod_revision that is not a count"));
    }
}
