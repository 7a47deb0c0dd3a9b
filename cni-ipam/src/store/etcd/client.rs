//! etcd's v3 JSON gateway (`POST /v3/kv/range`, `/v3/kv/txn`; keys and
//! values in base64) over plain HTTP/1.1, with one deadline per request
//! across endpoints and bounded answers.

use std::cell::Cell;
use std::io::Read as _;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use cni_types::{Code, Error};
use serde_json::{json, Value};

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::answer::{self, Outcome, Range};
use super::txn::{prefix_end, Read, Txn};
use super::{EtcdConfig, MAX_ANSWER, MAX_QUOTED, OPERATION_DEADLINE, REQUEST_TIMEOUT};

/// etcd's v3 JSON gateway.
#[derive(Debug)]
pub(super) struct Client {
    agent: ureq::Agent,
    pub(super) endpoints: Vec<String>,
    /// The member that answered last: the next request tries it first, so
    /// that a member found dead, hung or leaderless costs one share of
    /// one request's deadline, not one of each.
    first: Cell<usize>,
    /// When the whole operation (an ADD) must be done: no request goes
    /// past it.
    until: Option<Instant>,
    /// Bytes of every answer received so far, for measurements.
    pub(super) received: Cell<u64>,
    /// Requests made so far (each counted once, whichever members it
    /// tried), for measurements.
    pub(super) sent: Cell<u64>,
}

/// A JSON answer of etcd, and where it came from (for messages).
struct Answer {
    endpoint: String,
    answer: Value,
    /// The answer as text, at most [`MAX_QUOTED`] bytes and the size of
    /// the rest.
    text: String,
}

impl Answer {
    /// Code 11: the answer to `path` is not etcd's, as `what` says.
    fn not_etcd(&self, path: &str, what: &str) -> Error {
        not_etcd(&self.endpoint, path, what, &self.text)
    }
}

impl Client {
    /// A client of the members `cfg` names; every request of it ends by
    /// `until` when given.
    pub(super) fn new(cfg: &EtcdConfig, until: Option<Instant>) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // etcd is reached directly, never through a proxy from the
            // runtime's environment.
            .proxy(None)
            // A buffer each way, zeroed when the connection opens: ureq's
            // 128 KiB each cost an ADD more page faults and zeroing than
            // its requests. etcd's headers are a few hundred bytes; a
            // larger body streams through.
            .input_buffer_size(IO_BUFFER)
            .output_buffer_size(IO_BUFFER)
            .max_response_header_size(IO_BUFFER)
            .build();
        let agent = ureq::Agent::with_parts(config, DefaultConnector::new(), LiteralResolver);
        Client {
            agent,
            endpoints: cfg.endpoints.clone(),
            first: Cell::new(0),
            until,
            received: Cell::new(0),
            sent: Cell::new(0),
        }
    }

    /// Every key under `prefix` (no values), linearizable.
    pub(super) fn keys_under(&self, prefix: &str) -> Result<Vec<String>, Error> {
        let read = Read::prefix(prefix).keys_only();
        let range = self.range(&read.body())?;
        Ok(range.kvs.into_iter().map(|(k, _)| k).collect())
    }

    /// Every key under `prefix` with its value, in pages of [`PAGE`] keys
    /// (each its own request, with its own deadline): a listing too large
    /// for one request's deadline still completes.
    pub(super) fn range_prefix_paged(
        &self,
        prefix: &str,
        linearizable: bool,
    ) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let mut from = prefix.as_bytes().to_vec();
        let mut out = Vec::new();
        loop {
            let Range {
                kvs: page, more, ..
            } = self.page(prefix, &from, PAGE, linearizable)?;
            let Some((last, _)) = page.last() else {
                return Ok(out);
            };
            from = last.as_bytes().to_vec();
            from.push(0);
            out.extend(page);
            if !more {
                return Ok(out);
            }
        }
    }

    /// At most `limit` keys under `prefix` with their values, from the key
    /// `from` on (in etcd's order), or from the prefix's first key when
    /// none lies after `from`: a bounded window of a listing too large to
    /// read whole, starting where the caller chose.
    pub(super) fn range_window(
        &self,
        prefix: &str,
        from: &str,
        limit: u64,
        linearizable: bool,
    ) -> Result<Vec<(String, Vec<u8>)>, Error> {
        let window = self.page(prefix, from.as_bytes(), limit, linearizable)?.kvs;
        if window.is_empty() && from != prefix {
            return Ok(self
                .page(prefix, prefix.as_bytes(), limit, linearizable)?
                .kvs);
        }
        Ok(window)
    }

    /// One request for at most `limit` keys under `prefix`, from the key
    /// `from` on.
    fn page(
        &self,
        prefix: &str,
        from: &[u8],
        limit: u64,
        linearizable: bool,
    ) -> Result<Range, Error> {
        self.range(
            &json!({"key": B64.encode(from), "range_end": B64.encode(prefix_end(prefix)),
                           "limit": limit, "serializable": !linearizable}),
        )
    }

    /// Runs the transaction `txn`: its outcome, with one response for
    /// each operation that ran, of that operation's kind.
    pub(super) fn txn(&self, txn: &Txn) -> Result<Outcome, Error> {
        let deadline = self.deadline("/v3/kv/txn")?;
        self.txn_by(txn, deadline)
    }

    /// [`Client::txn`] with one request's deadline of its own, even past
    /// the operation's: for undoing what the operation may have done
    /// before it fails.
    pub(super) fn txn_past_deadline(&self, txn: &Txn) -> Result<Outcome, Error> {
        self.txn_by(txn, Instant::now() + REQUEST_TIMEOUT)
    }

    /// Time left of the operation's deadline, when it has one.
    pub(super) fn time_left(&self) -> Option<Duration> {
        (self.until).map(|until| until.saturating_duration_since(Instant::now()))
    }

    fn txn_by(&self, txn: &Txn, deadline: Instant) -> Result<Outcome, Error> {
        const PATH: &str = "/v3/kv/txn";
        let answer = self.call(PATH, &txn.body(), deadline)?;
        let (succeeded, responses) =
            answer::txn(&answer.answer).map_err(|what| answer.not_etcd(PATH, &what.to_string()))?;
        let ran = if succeeded {
            &txn.success
        } else {
            &txn.failure
        };
        if responses.len() != ran.len() {
            let what = format!("{} responses to {} operations", responses.len(), ran.len());
            return Err(answer.not_etcd(PATH, &what));
        }
        if let Some((op, r)) = ran
            .iter()
            .zip(&responses)
            .find(|(op, r)| op.kind() != r.kind())
        {
            let what = format!("a {} response to a {} operation", r.kind(), op.kind());
            return Err(answer.not_etcd(PATH, &what));
        }
        Ok(Outcome {
            succeeded,
            responses,
            endpoint: answer.endpoint,
            text: answer.text,
        })
    }

    /// The range read of `body` (`POST /v3/kv/range`).
    fn range(&self, body: &Value) -> Result<Range, Error> {
        const PATH: &str = "/v3/kv/range";
        let answer = self.call(PATH, body, self.deadline(PATH)?)?;
        Range::decode(&answer.answer).map_err(|what| answer.not_etcd(PATH, &what.to_string()))
    }

    /// When a request to `path` sent now must be answered:
    /// [`REQUEST_TIMEOUT`] from now, or the operation's deadline if
    /// sooner; code 11 once that has passed.
    fn deadline(&self, path: &str) -> Result<Instant, Error> {
        let now = Instant::now();
        match self.until {
            Some(until) if until <= now => Err(Error::try_again_later(
                format!("the {OPERATION_DEADLINE:?} given to one operation on etcd passed"),
                format!("before {path} to {}", self.endpoints.join(", ")),
            )),
            Some(until) => Ok(until.min(now + REQUEST_TIMEOUT)),
            None => Ok(now + REQUEST_TIMEOUT),
        }
    }

    /// POSTs `body` to the first endpoint that answers, all by
    /// `deadline`, starting with the one that answered last; each is
    /// given an equal share of the time left. Unreachable, a passing
    /// failure of the member or the cluster ([`passing`]: no leader, an
    /// election, a restart) or an answer that is not etcd's is code 11; a
    /// refusal of the request itself (a malformed request, too many
    /// operations) is code 999.
    fn call(&self, path: &str, body: &Value, deadline: Instant) -> Result<Answer, Error> {
        let body = body.to_string();
        self.sent.set(self.sent.get() + 1);
        let mut failures = Vec::new();
        let (count, first) = (self.endpoints.len(), self.first.get());
        for n in 0..count {
            let endpoint = &self.endpoints[(first + n) % count];
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                failures.push(format!("{endpoint}: not tried, {REQUEST_TIMEOUT:?} spent"));
                continue;
            }
            // An equal share of what is left for each endpoint not tried yet.
            let share = left / (count - n) as u32;
            let sent = self
                .agent
                .post(&format!("{endpoint}{path}"))
                .config()
                .timeout_global(Some(share))
                .build()
                .header("content-type", "application/json")
                .send(body.as_str());
            let mut response = match sent {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{endpoint}: {e}"));
                    continue;
                }
            };
            let status = response.status().as_u16();
            let mut reader = response.body_mut().with_config().limit(MAX_ANSWER).reader();
            let bytes = match read_bounded(&mut reader, status == 200) {
                Ok(b) => b,
                Err(e) => {
                    failures.push(format!("{endpoint}: {e}"));
                    continue;
                }
            };
            self.received.set(self.received.get() + bytes.size);
            let text = bytes.quote();
            if status == 200 {
                match serde_json::from_slice::<Value>(&bytes.head) {
                    // Every etcd answer has a header (cluster, member,
                    // revision); `{}` or `[]` is something else.
                    Ok(answer) if answer.get("header").is_some_and(Value::is_object) => {
                        self.first.set((first + n) % count);
                        return Ok(Answer {
                            endpoint: endpoint.clone(),
                            answer,
                            text,
                        });
                    }
                    Ok(_) => {
                        return Err(not_etcd(
                            endpoint,
                            path,
                            "an answer without a header",
                            &text,
                        ))
                    }
                    Err(e) => {
                        return Err(not_etcd(
                            endpoint,
                            path,
                            &format!("unreadable JSON ({e})"),
                            &text,
                        ))
                    }
                }
            }
            if passing(status, &bytes.head) {
                failures.push(format!("{endpoint}: HTTP {status}: {text}"));
                continue;
            }
            return Err(
                Error::new(Code::INTERNAL, format!("etcd {endpoint} refused {path}"))
                    .with_details(format!("HTTP {status}: {text}")),
            );
        }
        Err(Error::try_again_later(
            format!("etcd unreachable at {}", self.endpoints.join(", ")),
            failures.join("; "),
        ))
    }
}

/// Whether an answer of status `status` (not 200) and body `body` is a
/// passing state of the member or the cluster (try another member, or
/// again later: code 11), rather than a refusal of the request itself.
///
/// etcd answers through its gateway with the HTTP status of the gRPC
/// code, and the code in the body (`{"error", "code"}`). A server error
/// (5xx, as `Unavailable`: no leader, leader changed, request timed out,
/// stopping) passes; so do `Canceled` (408, a request cut by a restart),
/// `Aborted` (409), `FailedPrecondition` (412: "not capable" while a
/// restarted member learns the cluster's version), `ResourceExhausted`
/// (429: too many requests), `DeadlineExceeded` and `Unknown`, whatever
/// status carries them.
fn passing(status: u16, body: &[u8]) -> bool {
    let code = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("code").and_then(Value::as_u64));
    status >= 500
        || matches!(status, 408 | 409 | 412 | 425 | 429)
        || matches!(code, Some(1 | 2 | 4 | 8 | 9 | 10 | 14))
}

/// The size of the connection's input and output buffers, and the most
/// header bytes an answer may have.
const IO_BUFFER: usize = 16 << 10;

/// ureq's resolver, except that an endpoint named by an address is that
/// address: ureq's own resolves every request's host in a thread of its
/// own when the request has a deadline (to bound a DNS wait), a thread
/// per request an ADD does not need for `127.0.0.1` or `10.0.0.5`. A
/// host name is still resolved within the request's deadline.
#[derive(Debug)]
struct LiteralResolver;

impl Resolver for LiteralResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let literal = uri.host().and_then(|host| {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let ip = host.parse::<std::net::IpAddr>().ok()?;
            let port = uri.port_u16().unwrap_or(80);
            Some(std::net::SocketAddr::new(ip, port))
        });
        match literal {
            Some(addr) => {
                let mut addrs = self.empty();
                addrs.push(addr);
                Ok(addrs)
            }
            None => DefaultResolver::default().resolve(uri, config, timeout),
        }
    }
}

/// Keys read in one page of [`Client::range_prefix_paged`].
const PAGE: u64 = 5000;

/// Code 11: `endpoint` answered `path` with something that is not etcd's
/// answer, quoted.
pub(super) fn not_etcd(endpoint: &str, path: &str, what: &str, text: &str) -> Error {
    Error::try_again_later(
        format!("etcd {endpoint} answered {path} with {what}"),
        format!("the server answered: {text}"),
    )
}

/// An answer read: all of it (`whole`) or its first [`MAX_QUOTED`] bytes
/// and its size.
struct Bytes {
    head: Vec<u8>,
    size: u64,
}

impl Bytes {
    /// The answer as text for a message: at most [`MAX_QUOTED`] bytes, then
    /// how many more there were.
    fn quote(&self) -> String {
        let shown = &self.head[..self.head.len().min(MAX_QUOTED)];
        let text = String::from_utf8_lossy(shown);
        match self.size - shown.len() as u64 {
            0 => text.into_owned(),
            more => format!("{text}... ({more} more bytes, {} in all)", self.size),
        }
    }
}

/// Reads an answer: whole when `whole` (bounded by the reader's limit),
/// else its first [`MAX_QUOTED`] bytes, the rest only counted.
fn read_bounded(reader: &mut impl std::io::Read, whole: bool) -> std::io::Result<Bytes> {
    let mut head = Vec::new();
    if whole {
        reader.read_to_end(&mut head)?;
        let size = head.len() as u64;
        return Ok(Bytes { head, size });
    }
    reader.take(MAX_QUOTED as u64).read_to_end(&mut head)?;
    // Counted up to the reader's limit; past it (or on a broken
    // connection), what was counted is the size given.
    let (mut rest, mut buf) = (0u64, [0u8; 8192]);
    while let Ok(n @ 1..) = reader.read(&mut buf) {
        rest += n as u64;
    }
    let size = head.len() as u64 + rest;
    Ok(Bytes { head, size })
}
