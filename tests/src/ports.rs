//! Ports for the peers and published ports of tests.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// A port nothing listens on now, below the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`), and new to this process.
///
/// A port of the ephemeral range can become the source port of an
/// outgoing connection (another test's nodes open hundreds a second)
/// between this pick and etcd's bind, or while a killed member is down,
/// and etcd then exits on "address already in use": a cluster that never
/// becomes healthy. Outgoing connections never take a port below that
/// range, and a process-wide counter keeps two clusters started at once
/// from picking the same one.
pub fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 10_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    if ephemeral < FIRST + 1_000 {
        // No room below the range: let the kernel choose, as before.
        return TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
    }
    let span = ephemeral - FIRST;
    // Another test process picks from elsewhere in the span.
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = u16::try_from(FIRST + (start + n) % span).expect("below 65536");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {FIRST}..{ephemeral}");
}

#[cfg(test)]
mod tests {
    #[test]
    fn test_ports_are_free_distinct_and_below_the_ephemeral_range() {
        let ephemeral: u32 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|r| r.split_whitespace().next()?.parse().ok())
            .unwrap_or(32_768);
        let ports: Vec<u16> = (0..64).map(|_| super::free_port()).collect();
        let distinct: std::collections::HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "{ports:?}");
        for port in ports {
            if ephemeral >= 11_000 {
                assert!(u32::from(port) < ephemeral, "{port} in the ephemeral range");
            }
            assert!(
                std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
                "{port} not free"
            );
        }
    }
}
