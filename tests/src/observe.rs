//! What the end-to-end tests observe after a runtime ran our plugins:
//! whether a TCP service answers, the packet filter's rules, the
//! addresses an IPAM directory still holds. Shared by the tests that
//! drive real runtimes (`containerd_cri`, `podman_networks`,
//! `nerdctl_list`).

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::output_of;

/// What a TCP connection to `addr` (`a.b.c.d:port`) reads until the
/// server closes it (5 s at most each to connect and to read), trimmed;
/// or what went wrong, naming `addr`.
pub fn tcp_fetch(addr: &str) -> Result<String, String> {
    let to: SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let mut stream = TcpStream::connect_timeout(&to, Duration::from_secs(5))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut text = String::new();
    stream
        .read_to_string(&mut text)
        .map_err(|e| format!("read {addr}: {e}"))?;
    Ok(text.trim().to_owned())
}

/// Every rule of `iptables-save`, `ip6tables-save` and `nft list
/// ruleset`, one text: of the host, or of the namespace `netns` (a name
/// for `ip netns exec`).
///
/// # Panics
/// If a tool fails.
pub fn filter_rules(netns: Option<&str>) -> String {
    let mut all = String::new();
    for tool in [
        &["iptables-save"][..],
        &["ip6tables-save"][..],
        &["nft", "list", "ruleset"][..],
    ] {
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).args(tool);
                c
            }
            None => {
                let mut c = Command::new(tool[0]);
                c.args(&tool[1..]);
                c
            }
        };
        let out = output_of(&mut cmd, b"");
        assert!(out.success(), "{tool:?}: {out:?}");
        all.push_str(&out.stdout_str());
    }
    all
}

/// Whether `rules` name the host `address`: followed by `/`, `:`, a
/// space, a quote, a comma or the end, and not preceded by a digit or a
/// dot (so `10.0.0.2` is not found in `10.0.0.23` or `110.0.0.2`).
pub fn names_address(rules: &str, address: &str) -> bool {
    rules.match_indices(address).any(|(i, _)| {
        let before = rules[..i].chars().next_back();
        let after = rules[i + address.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit() || c == '.')
            && matches!(after, None | Some(' ' | '\n' | ':' | '/' | '"' | ','))
    })
}

/// The addresses `host-local` (or `ipam-file`) still holds in `dir`: the
/// names of its files that are IP addresses.
pub fn reserved_addresses(dir: &Path) -> Vec<String> {
    let mut held: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.parse::<std::net::IpAddr>().is_ok())
        .collect();
    held.sort();
    held
}

#[cfg(test)]
mod tests {
    use super::names_address;

    #[test]
    fn an_address_is_named_only_as_a_whole_host() {
        let rules = "-A X -s 10.0.0.23/32 -j A\n-A X -d 110.0.0.2/32\n";
        assert!(!names_address(rules, "10.0.0.2"));
        assert!(names_address(rules, "10.0.0.23"));
        assert!(names_address("ip daddr 10.0.0.2 dnat", "10.0.0.2"));
        assert!(names_address("--to-destination 10.0.0.2:80", "10.0.0.2"));
        assert!(names_address("... 10.0.0.2", "10.0.0.2"));
    }
}
