//! `ipam-etcd` (as a process) against a real etcd behind a proxy that
//! loses what a member dying mid-request loses: the answer to a
//! reservation etcd applied, or the reservation itself. The ADD either
//! reports the address etcd holds for it, once, or fails with code 11
//! holding nothing. The proxy is a thread of this test on 127.0.0.1.

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};
use tests::etcd::Etcd;
use tests::stand_in::{read_request, StandIn};
use tests::StdoutJson;
use tests::{plugin_bin_dir, run_plugin, RawOutput, FAKE_NETNS};

const ROOT: &str = "/cni-ipam/net/";

/// What the proxy loses of a reservation (a transaction putting a key
/// under `blocks/`).
#[derive(Clone, Copy, PartialEq)]
enum Loss {
    /// Passes it on, reads etcd's answer, and closes the plugin's
    /// connection instead of answering: applied, and not known to be.
    Answer,
    /// Closes the plugin's connection without passing it on.
    Request,
}

/// A proxy to etcd losing the first `times` reservations it sees as
/// `loss` says; everything else is passed on and answered. Stopped when
/// dropped.
struct LossyProxy {
    server: StandIn,
    /// Reservations lost so far.
    lost: Arc<AtomicUsize>,
}

impl LossyProxy {
    fn start(etcd: &Etcd, loss: Loss, times: usize) -> LossyProxy {
        let upstream: u16 = (etcd.endpoint().rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .expect("etcd's port");
        let lost = Arc::new(AtomicUsize::new(0));
        let l = lost.clone();
        let server = StandIn::start(move |stream| relay(stream, upstream, loss, times, &l));
        LossyProxy { server, lost }
    }

    fn endpoint(&self) -> String {
        self.server.endpoint()
    }

    fn lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }
}

impl Drop for LossyProxy {
    fn drop(&mut self) {
        tests::etcd::forget_hints(&[self.endpoint()]);
    }
}

/// Serves one request of the plugin's connection: passed to etcd on a
/// connection of its own (`connection: close`, so etcd's answer ends
/// where the connection does, and the plugin does not reuse it), etcd's
/// answer passed back, unless it is a reservation to lose.
fn relay(client: TcpStream, upstream: u16, loss: Loss, times: usize, lost: &AtomicUsize) {
    let mut reader = BufReader::new(client.try_clone().expect("clone"));
    let mut out = client;
    let Some((mut head, body)) = read_request(&mut reader) else {
        return;
    };
    let line_end = head.find("\r\n").map_or(head.len(), |at| at + 2);
    head.insert_str(line_end, "connection: close\r\n");
    let lose = head.starts_with("POST /v3/kv/txn ")
        && is_reservation(&body)
        && lost
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < times).then_some(n + 1)
            })
            .is_ok();
    if lose && loss == Loss::Request {
        return;
    }
    let Ok(mut etcd) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    let _ = etcd.set_read_timeout(Some(Duration::from_secs(10)));
    let mut answer = Vec::new();
    let exchanged = etcd
        .write_all(head.as_bytes())
        .and_then(|()| etcd.write_all(b"\r\n"))
        .and_then(|()| etcd.write_all(&body))
        .and_then(|()| etcd.read_to_end(&mut answer));
    if exchanged.is_ok() && !lose {
        let _ = out.write_all(&answer);
    }
}

/// Whether the transaction `body` puts a reservation's key
/// (`<root>blocks/<block>/<address>`).
fn is_reservation(body: &[u8]) -> bool {
    let txn: Value = serde_json::from_slice(body).unwrap_or_default();
    let puts = txn["success"].as_array().into_iter().flatten();
    puts.filter_map(|op| op["request_put"]["key"].as_str())
        .filter_map(|k| B64.decode(k).ok())
        .any(|k| k.starts_with(format!("{ROOT}blocks/").as_bytes()))
}

/// `command` of container `c1` through `proxy`.
fn run(command: &str, proxy: &LossyProxy) -> RawOutput {
    let conf = json!({"cniVersion": "1.1.0", "name": "net", "type": "bridge",
        "ipam": {"type": "ipam-etcd", "ranges": [[{"subnet": "10.95.0.0/24"}]],
                 "store": {"type": "etcd", "endpoints": [proxy.endpoint()], "node": "n1"}}});
    run_plugin(
        &plugin_bin_dir().join("ipam-etcd"),
        &[
            ("CNI_COMMAND", command),
            ("CNI_CONTAINERID", "c1"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_NETNS", FAKE_NETNS),
            ("CNI_PATH", "/usr/lib/cni"),
        ],
        &serde_json::to_vec(&conf).expect("JSON"),
    )
}

/// Every reservation etcd holds (address -> container id), and the
/// `borrowed` index keys.
fn held(etcd: &Etcd) -> (Vec<(String, String)>, Vec<String>) {
    let reservations = etcd
        .get_prefix(&format!("{ROOT}blocks/"))
        .into_iter()
        .map(|(key, value)| {
            let v: Value = serde_json::from_str(&value).expect("a reservation");
            let ip = key.rsplit('/').next().unwrap_or_default().to_owned();
            (ip, v["containerID"].as_str().unwrap_or_default().to_owned())
        })
        .collect();
    let borrowed = etcd.keys(&format!("{ROOT}nodes/n1/borrowed/"));
    (reservations, borrowed)
}

/// The address of a successful ADD's result.
fn address(out: &RawOutput) -> String {
    let v = out.stdout_json();
    let a = v["ips"][0]["address"].as_str().unwrap_or_default();
    a.split('/').next().unwrap_or_default().to_owned()
}

/// The ADD that lost `loss` `times`, then met an etcd answering: it
/// reports the one address etcd holds for it, which its DEL releases.
fn add_reports_what_etcd_holds(loss: Loss, times: usize) {
    let etcd = Etcd::start();
    let proxy = LossyProxy::start(&etcd, loss, times);
    let out = run("ADD", &proxy);
    assert_eq!(out.status(), Some(0), "{out:?}");
    assert_eq!(proxy.lost(), times);
    let (reservations, _) = held(&etcd);
    assert_eq!(reservations, [(address(&out), "c1".to_owned())]);
    let del = run("DEL", &proxy);
    assert_eq!(del.status(), Some(0), "{del:?}");
    assert_eq!(held(&etcd), (Vec::new(), Vec::new()));
}

#[test]
fn a_reservation_applied_whose_answers_were_lost_is_reported_once_etcd_answers_again() {
    add_reports_what_etcd_holds(Loss::Answer, 3);
}

#[test]
fn a_reservation_lost_on_its_way_to_etcd_is_sent_again_and_applied_once() {
    add_reports_what_etcd_holds(Loss::Request, 2);
}

#[test]
fn a_reservation_whose_answers_never_come_back_is_withdrawn_and_the_add_fails_code_11_holding_nothing(
) {
    let etcd = Etcd::start();
    let proxy = LossyProxy::start(&etcd, Loss::Answer, usize::MAX);
    let started = Instant::now();
    let out = run("ADD", &proxy);
    let took = started.elapsed();
    assert_eq!(out.status(), Some(1), "{out:?}");
    let e = out.stdout_json();
    assert_eq!(e["code"], 11, "{e}");
    let details = e["details"].as_str().unwrap_or_default();
    assert!(
        details.contains("applied by etcd after all, then withdrawn"),
        "{e}"
    );
    assert!(proxy.lost() > 1, "sent {} times", proxy.lost());
    // Within the ADD's deadline (15 s).
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert_eq!(held(&etcd), (Vec::new(), Vec::new()));
}
