//! Shaping is real: a pod on `bridge` + `host-local` + `bandwidth` (ours,
//! run by our `cnitool` with the `bandwidth` capability, as a runtime
//! passes it) gets a TCP transfer from a namespace of the test's own (the
//! host side, where the bridge is) at its configured `ingressRate`, and
//! sends one back at its `egressRate`, each within 15%.
//!
//! The rate a receiver sees is counted once the first bucket's worth
//! (`*Burst`) has arrived: that much passes at line speed by design. What
//! is compared is TCP payload per second against the configured rate of
//! whole frames, so the payload's share of a full frame (about 96%) is
//! inside the 15%. The rates are modest (16 and 24 Mbit/s) so that a busy
//! machine keeps up with them.
//!
//! `bandwidth_vs_reference` compares the qdiscs, filter and ifb with the
//! reference's; this measures what they do. Needs root.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use cni_net::Netns;
use serde_json::json;
use tests::sandbox::NetDirs;
use tests::{in_host_namespace, plugin_bin_dir, NetNs};

type AnyError = Box<dyn std::error::Error + Send + Sync>;

/// The tolerance on the measured rate, both ways.
const TOLERANCE: f64 = 0.15;

/// Bytes moved each way: at least 3 s of shaped traffic at these rates.
const TRANSFER: usize = 8 << 20;

/// What the receiving side measured.
#[derive(Debug)]
struct Measured {
    /// TCP payload per second after the first bucket, in bits per second.
    bits_per_second: f64,
    /// How long the whole transfer took.
    elapsed: Duration,
}

/// Sends [`TRANSFER`] bytes over TCP from a socket made in `from` to a
/// listener made in `to` on `to_addr`; the receiver's rate once `skip`
/// bytes (the bucket) have arrived.
fn transfer(from: &Netns, to: &Netns, to_addr: &str, skip: usize) -> Measured {
    let listener = to
        .run(|_| -> Result<TcpListener, AnyError> { Ok(TcpListener::bind((to_addr, 0))?) })
        .expect("listen in the receiving namespace");
    let port = listener.local_addr().expect("the listener's port").port();
    let target: SocketAddr = format!("{to_addr}:{port}").parse().expect("an address");
    let mut sender = from
        .run(|_| -> Result<TcpStream, AnyError> {
            Ok(TcpStream::connect_timeout(
                &target,
                Duration::from_secs(10),
            )?)
        })
        .expect("connect from the sending namespace");
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let chunk = vec![0x5au8; 64 << 10];
        let mut left = TRANSFER;
        while left > 0 {
            let n = left.min(chunk.len());
            sender.write_all(&chunk[..n])?;
            left -= n;
        }
        sender.shutdown(std::net::Shutdown::Write)
    });
    let (mut receiver, _) = listener.accept().expect("accept the transfer");
    receiver
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a read timeout");
    let mut buf = vec![0u8; 64 << 10];
    let mut got = 0usize;
    let start = Instant::now();
    let mut after_bucket: Option<(Instant, usize)> = None;
    loop {
        let n = receiver.read(&mut buf).expect("receive the transfer");
        if n == 0 {
            break;
        }
        got += n;
        if after_bucket.is_none() && got >= skip {
            after_bucket = Some((Instant::now(), got));
        }
    }
    let end = Instant::now();
    writer
        .join()
        .expect("the sender thread")
        .expect("send the transfer");
    assert_eq!(got, TRANSFER, "the whole transfer arrives");
    let (t0, at_t0) = after_bucket.expect("more than a bucket arrives");
    Measured {
        bits_per_second: (got - at_t0) as f64 * 8.0 / (end - t0).as_secs_f64(),
        elapsed: end - start,
    }
}

fn assert_within(what: &str, measured: &Measured, rate: u64) {
    let ratio = measured.bits_per_second / rate as f64;
    eprintln!(
        "{what}: {:.2} Mbit/s against {:.2} configured ({measured:?})",
        measured.bits_per_second / 1e6,
        rate as f64 / 1e6
    );
    assert!(
        (1.0 - TOLERANCE..=1.0 + TOLERANCE).contains(&ratio),
        "{what}: measured {:.2} Mbit/s ({:?} in all) against {:.2} Mbit/s configured \
         ({:.0}%, allowed {:.0}%..{:.0}%)",
        measured.bits_per_second / 1e6,
        measured.elapsed,
        rate as f64 / 1e6,
        ratio * 100.0,
        (1.0 - TOLERANCE) * 100.0,
        (1.0 + TOLERANCE) * 100.0
    );
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_shaped_pod_receives_and_sends_at_its_configured_rates_within_15_percent() {
    let host = NetNs::create("shape-host");
    let ctr = NetNs::create("shape-ctr");
    let wrappers = tempfile::tempdir().expect("a temporary directory");
    for name in ["bridge", "host-local", "bandwidth"] {
        in_host_namespace(wrappers.path(), &plugin_bin_dir().join(name), &host);
    }
    let dirs = NetDirs::new("shaping-", vec![wrappers.path().to_path_buf()]);
    dirs.reset(&json!({
        "cniVersion": "1.0.0", "name": "shaped",
        "plugins": [
            {"type": "bridge", "bridge": "shape0", "isGateway": true,
             "ipam": {"type": "host-local", "dataDir": dirs.ipam(),
                      "ranges": [[{"subnet": "10.219.100.0/24"}]]}},
            {"type": "bandwidth", "capabilities": {"bandwidth": true}}
        ]
    }));
    let (ingress_rate, egress_rate): (u64, u64) = (16_000_000, 24_000_000);
    let burst_bits: u64 = 512 * 1024 * 8;
    let cnitool = dirs.cnitool("shaped-1").with_cap_args(json!({
        "bandwidth": {"ingressRate": ingress_rate, "ingressBurst": burst_bits,
                      "egressRate": egress_rate, "egressBurst": burst_bits}
    }));
    let add = cnitool.add("shaped", &ctr.path());
    assert_eq!(add["ok"], true, "{add}");
    let pod_ip = add["result"]["ips"][0]["address"]
        .as_str()
        .and_then(|a| a.split('/').next())
        .expect("the pod's address")
        .to_owned();

    let host_ns = Netns::open(host.path()).expect("open the host namespace");
    let ctr_ns = Netns::open(ctr.path()).expect("open the pod's namespace");
    let skip = (burst_bits / 8) as usize;
    let ingress = transfer(&host_ns, &ctr_ns, &pod_ip, skip);
    let egress = transfer(&ctr_ns, &host_ns, "10.219.100.1", skip);

    let del = cnitool.del("shaped", &ctr.path());
    assert_eq!(del["ok"], true, "{del}");
    assert_within("host to pod (ingressRate)", &ingress, ingress_rate);
    assert_within("pod to host (egressRate)", &egress, egress_rate);
}
