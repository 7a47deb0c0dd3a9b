//! `ipam-etcd` as a process against servers that are not a healthy etcd: a
//! server answering `{}` to everything, one answering a 100 MiB error,
//! endpoints that accept and never answer, and endpoint URLs carrying
//! credentials. Each server is a thread of this test on 127.0.0.1 and a
//! port of its own.

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::stand_in::{read_request, StandIn};
use tests::StdoutJson;
use tests::{plugin_bin_dir, run_plugin, RawOutput, FAKE_NETNS};

/// What a fake server does with each request.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Answers 200 `{}`.
    EmptyObject,
    /// Answers 400 with a body of this many bytes.
    HugeError(usize),
    /// Reads nothing and never answers.
    Hang,
    /// Answers as an etcd member that restarted and does not know the
    /// cluster's version yet: 412 `etcdserver: not capable`.
    NotCapable,
    /// Answers every transaction as held, with no responses at all (etcd
    /// answers one per operation).
    NoResponses,
    /// A well-formed etcd that holds no key, yet fails every reservation
    /// as if its address were taken: an ADD can only lose, forever.
    AlwaysTaken,
}

/// A fake etcd endpoint, stopped when dropped.
struct Fake {
    server: StandIn,
    requests: Arc<AtomicUsize>,
    connections: Arc<AtomicUsize>,
}

impl Fake {
    fn start(behaviour: Behaviour) -> Fake {
        let requests = Arc::new(AtomicUsize::new(0));
        let connections = Arc::new(AtomicUsize::new(0));
        let (r, c) = (requests.clone(), connections.clone());
        let server = StandIn::start(move |stream| {
            c.fetch_add(1, Ordering::SeqCst);
            answer(stream, behaviour, &r);
        });
        Fake {
            server,
            requests,
            connections,
        }
    }

    fn endpoint(&self) -> String {
        self.server.endpoint()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        tests::etcd::forget_hints(&[self.endpoint()]);
    }
}

/// Serves the requests of one connection until the client closes it;
/// [`Behaviour::Hang`] holds it, reading nothing, until the client does.
fn answer(stream: TcpStream, behaviour: Behaviour, requests: &AtomicUsize) {
    if let Behaviour::Hang = behaviour {
        // Blocks until the client closes the connection (or sends
        // anything, which it would not before an answer).
        let _ = (&stream).read(&mut [0u8; 1]);
        return;
    }
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut out = stream;
    loop {
        let Some((head, body)) = read_request(&mut reader) else {
            return;
        };
        let path = head.split(' ').nth(1).unwrap_or("?").to_owned();
        requests.fetch_add(1, Ordering::SeqCst);
        let written = match behaviour {
            Behaviour::EmptyObject => write_json(&mut out, "200 OK", "{}"),
            Behaviour::HugeError(size) => {
                let head = format!("HTTP/1.1 400 Bad Request\r\ncontent-length: {size}\r\n\r\n");
                let chunk = vec![b'x'; 1 << 16];
                let mut left = size;
                let mut w = out.write_all(head.as_bytes());
                while w.is_ok() && left > 0 {
                    let n = left.min(chunk.len());
                    w = out.write_all(&chunk[..n]);
                    left -= n;
                }
                w
            }
            Behaviour::NoResponses => {
                let body = r#"{"header":{"revision":"7"},"succeeded":true}"#;
                write_json(&mut out, "200 OK", body)
            }
            Behaviour::AlwaysTaken => {
                let txn: Value = serde_json::from_slice(&body).unwrap_or_default();
                let empty = |list: &str| txn[list].as_array().is_some_and(Vec::is_empty);
                let body = match path.as_str() {
                    // Reads (no comparisons) and block claims (nothing to
                    // read on failure) succeed, finding nothing.
                    "/v3/kv/txn" if empty("compare") || empty("failure") => format!(
                        r#"{{"header":{{"revision":"7"}},"succeeded":true,"responses":[{}]}}"#,
                        responses(&txn["success"], "")
                    ),
                    // A reservation finds its address's key there.
                    "/v3/kv/txn" => format!(
                        r#"{{"header":{{"revision":"7"}},"responses":[{}]}}"#,
                        responses(&txn["failure"], r#"{"key":"eA==","value":"eA=="}"#)
                    ),
                    _ => r#"{"header":{"revision":"7"}}"#.to_owned(),
                };
                write_json(&mut out, "200 OK", &body)
            }
            Behaviour::NotCapable => {
                let body = r#"{"error":"etcdserver: not capable","message":"etcdserver: not capable","code":9}"#;
                write_json(&mut out, "412 Precondition Failed", body)
            }
            // Held above.
            Behaviour::Hang => return,
        };
        if written.is_err() {
            return;
        }
    }
}

/// Writes an HTTP answer of status `status` carrying the JSON `body`.
fn write_json(out: &mut impl Write, status: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    out.write_all(head.as_bytes())
        .and_then(|()| out.write_all(body.as_bytes()))
}

/// The responses etcd gives the operations `ops` of a transaction: one
/// each, of its kind, every read finding `kv` (none when empty).
fn responses(ops: &Value, kv: &str) -> String {
    let response = |op: &Value| {
        if op.get("request_put").is_some() {
            r#"{"response_put":{}}"#.to_owned()
        } else if op.get("request_delete_range").is_some() {
            r#"{"response_delete_range":{}}"#.to_owned()
        } else if kv.is_empty() {
            r#"{"response_range":{}}"#.to_owned()
        } else {
            format!(r#"{{"response_range":{{"kvs":[{kv}],"count":"1"}}}}"#)
        }
    };
    let list: Vec<String> = ops.as_array().into_iter().flatten().map(response).collect();
    list.join(",")
}

fn ipam_etcd() -> PathBuf {
    plugin_bin_dir().join("ipam-etcd")
}

/// An ADD of `c1` with these endpoints and `prefix` (when given).
fn add(endpoints: &[String], prefix: Option<&str>) -> RawOutput {
    let mut store = json!({"type": "etcd", "endpoints": endpoints, "node": "n1"});
    if let Some(prefix) = prefix {
        store["prefix"] = json!(prefix);
    }
    let conf = json!({"cniVersion": "1.1.0", "name": "net", "type": "bridge",
        "ipam": {"type": "ipam-etcd", "ranges": [[{"subnet": "10.90.0.0/24"}]], "store": store}});
    run_plugin(
        &ipam_etcd(),
        &[
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_NETNS", FAKE_NETNS),
            ("CNI_PATH", "/usr/lib/cni"),
        ],
        &serde_json::to_vec(&conf).expect("JSON"),
    )
}

fn error(out: &RawOutput) -> Value {
    assert_eq!(out.status(), Some(1), "{out:?}");
    out.stdout_json()
}

/// The error of an ADD against `fake` alone, and how long it took.
fn failed_add(fake: &Fake) -> (Value, Duration) {
    let started = Instant::now();
    let out = add(&[fake.endpoint()], None);
    (error(&out), started.elapsed())
}

/// `e[key]` as text.
fn text<'v>(e: &'v Value, key: &str) -> &'v str {
    e[key].as_str().unwrap_or_default()
}

#[test]
fn a_server_answering_empty_objects_is_code_11_at_once_quoting_its_answer() {
    let fake = Fake::start(Behaviour::EmptyObject);
    let (e, took) = failed_add(&fake);
    assert_eq!(e["code"], 11, "{e}");
    assert!(text(&e, "msg").contains(&fake.endpoint()), "{e}");
    assert!(text(&e, "details").contains("answered: {}"), "{e}");
    let requests = fake.requests.load(Ordering::SeqCst);
    assert!(requests <= 3, "{requests} requests in {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn a_member_that_restarted_and_is_not_capable_yet_is_code_11_and_the_next_member_is_tried() {
    let (restarting, other) = (
        Fake::start(Behaviour::NotCapable),
        Fake::start(Behaviour::NotCapable),
    );
    let out = add(&[restarting.endpoint(), other.endpoint()], None);
    let e = error(&out);
    assert_eq!(e["code"], 11, "{e}");
    assert!(text(&e, "details").contains("not capable"), "{e}");
    assert_eq!(other.requests.load(Ordering::SeqCst), 1, "{e}");
}

#[test]
fn a_transaction_answered_without_its_responses_is_code_11_naming_the_endpoint() {
    let fake = Fake::start(Behaviour::NoResponses);
    let (e, _) = failed_add(&fake);
    assert_eq!(e["code"], 11, "{e}");
    assert!(text(&e, "msg").contains(&fake.endpoint()), "{e}");
    assert!(
        text(&e, "msg").contains("0 responses to 4 operations"),
        "{e}"
    );
    assert!(text(&e, "details").contains(r#""succeeded":true"#), "{e}");
    assert_eq!(fake.requests.load(Ordering::SeqCst), 1, "{e}");
}

#[test]
fn an_add_that_keeps_losing_races_backs_off_and_gives_up_after_a_bounded_number() {
    let fake = Fake::start(Behaviour::AlwaysTaken);
    let (e, took) = failed_add(&fake);
    assert_eq!(e["code"], 11, "{e}");
    assert!(text(&e, "msg").contains("32 races lost"), "{e}");
    // Per race, a read of the node's index, a count and a listing of the
    // blocks' owners (the fake keeps no block, so each race claims one
    // anew), a read of what the block holds, the claim and the
    // reservation: 32 races, not thousands.
    let requests = fake.requests.load(Ordering::SeqCst);
    assert!(requests <= 6 * 32 + 1, "{requests} requests in {took:?}");
    assert!(took < Duration::from_secs(11), "{took:?}");
}

#[test]
fn a_huge_error_body_is_quoted_in_its_first_kib_and_its_size() {
    const SIZE: usize = 100 << 20;
    let fake = Fake::start(Behaviour::HugeError(SIZE));
    let out = add(&[fake.endpoint()], None);
    assert!(
        out.stdout.len() < 16 << 10,
        "{} bytes on stdout",
        out.stdout.len()
    );
    let e = error(&out);
    let details = text(&e, "details");
    assert!(details.contains("HTTP 400"), "{e}");
    assert!(details.contains(&format!("{SIZE} in all")), "{e}");
}

#[test]
fn endpoints_that_never_answer_share_one_deadline() {
    let (a, b, c) = (
        Fake::start(Behaviour::Hang),
        Fake::start(Behaviour::Hang),
        Fake::start(Behaviour::Hang),
    );
    let started = Instant::now();
    let out = add(&[a.endpoint(), b.endpoint(), c.endpoint()], None);
    let took = started.elapsed();
    assert_eq!(error(&out)["code"], 11, "{out:?}");
    // One 2 s deadline for the read, not 2 s for each of three endpoints.
    assert!(took < Duration::from_millis(3500), "{took:?}");
    for fake in [&a, &b, &c] {
        assert_eq!(
            fake.connections.load(Ordering::SeqCst),
            1,
            "each endpoint tried once"
        );
    }
}

#[test]
fn credentials_in_an_endpoint_are_refused_never_sent_never_shown() {
    let fake = Fake::start(Behaviour::EmptyObject);
    let url = format!("http://admin:hunter2@127.0.0.1:{}", fake.server.port());
    let out = add(&[url], None);
    let e = error(&out);
    assert_eq!(e["code"], 7, "{e}");
    assert_eq!(e["msg"], "invalid ipam.store.endpoints[0]", "{e}");
    for text in [out.stdout_str(), out.stderr_str()] {
        assert!(
            !text.contains("hunter2") && !text.contains("admin"),
            "{text}"
        );
    }
    assert_eq!(fake.connections.load(Ordering::SeqCst), 0);
}

#[test]
fn a_prefix_that_is_empty_or_has_control_characters_is_code_7() {
    let fake = Fake::start(Behaviour::EmptyObject);
    for prefix in ["", "/", "/cni\u{1b}[2J", "/a b"] {
        let e = error(&add(&[fake.endpoint()], Some(prefix)));
        assert_eq!(e["code"], 7, "{prefix:?}: {e}");
        assert_eq!(e["msg"], "invalid ipam.store.prefix", "{prefix:?}: {e}");
    }
    assert_eq!(fake.connections.load(Ordering::SeqCst), 0);
}
