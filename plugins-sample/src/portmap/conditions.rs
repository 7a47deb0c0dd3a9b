//! `conditionsV4` / `conditionsV6`: extra matches on the entry rules,
//! written for the backend (iptables arguments, or nft rule text), read
//! into [`Match`]es.
//!
//! A departure from the reference, which pastes the text into its rules
//! unread: only the common matches are understood (source and destination
//! address or prefix, input and output interface, mark, each negated with
//! `!` or `!=`); anything else is refused with code 7 naming the
//! condition, before anything changes, rather than failing half-way
//! through an ADD or, worse, being read by a shell-like splitter. Words
//! are split on spaces in both backends (an iptables condition given as
//! one string, `"-d 10.0.0.1"`, works here; the reference would hand it
//! to iptables as one argument, which refuses it).

use std::net::IpAddr;

use cni_netfilter::{BackendKind, Match};
use cni_types::{Error, IpFamily, IpNetwork};

/// The backend a list of conditions is written for, as the reference
/// guesses it: none when empty or its first is `""`, iptables when the
/// first starts with `-` or `!`, else nftables.
///
/// Go: `detectBackendOfConditions`.
pub fn backend_of(conditions: &[String]) -> Option<BackendKind> {
    let first = conditions.first().filter(|c| !c.is_empty())?;
    Some(if first.starts_with(['-', '!']) {
        BackendKind::Iptables
    } else {
        BackendKind::Nftables
    })
}

/// The matches `conditions` say, for the `backend` and the family `ip`,
/// in the order `iptables-save` prints them (addresses, then
/// interfaces, then the mark); `field` names the configuration key in
/// errors.
pub fn parse(
    field: &str,
    conditions: &[String],
    backend: BackendKind,
    ip: IpFamily,
) -> Result<Vec<Match>, Error> {
    let words: Vec<&str> = conditions
        .iter()
        .flat_map(|c| c.split_whitespace())
        .collect();
    let mut matches = match backend {
        BackendKind::Iptables => iptables(&words),
        BackendKind::Nftables => nftables(&words, ip),
    }
    .map_err(|reason| Error::invalid_config(field, format!("{conditions:?}: {reason}")))?;
    for m in &matches {
        if let Match::Source { net, .. } | Match::Destination { net, .. } = m {
            if net.family() != ip {
                return Err(Error::invalid_config(
                    field,
                    format!("{net}: not an address of this family"),
                ));
            }
        }
    }
    matches.sort_by_key(order);
    Ok(matches)
}

/// Where `iptables-save` prints a match: addresses, interfaces, then
/// extension matches.
fn order(m: &Match) -> u8 {
    match m {
        Match::Source { .. } => 0,
        Match::Destination { .. } => 1,
        Match::InInterface { .. } => 2,
        Match::OutInterface { .. } => 3,
        _ => 4,
    }
}

/// Why conditions are not understood, said in the error after the
/// conditions themselves.
#[derive(Debug)]
struct NotUnderstood(String);

impl std::fmt::Display for NotUnderstood {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// iptables arguments: `[!] -s|-d ADDR[/LEN]`, `[!] -i|-o NAME`,
/// `-m mark [!] --mark VALUE[/MASK]`.
fn iptables(words: &[&str]) -> Result<Vec<Match>, NotUnderstood> {
    let mut out = Vec::new();
    let mut rest = words;
    while let Some((&first, tail)) = rest.split_first() {
        let (negate, option, tail) = match (first, tail) {
            ("!", [option, tail @ ..]) => (true, *option, tail),
            _ => (false, first, tail),
        };
        let value = |tail: &[&str]| -> Result<String, NotUnderstood> {
            tail.first()
                .map(|v| v.to_string())
                .ok_or_else(|| NotUnderstood(format!("{option} needs a value")))
        };
        rest = match option {
            "-s" | "--source" | "--src" | "-d" | "--destination" | "--dst" => {
                let net = network(&value(tail)?)?;
                out.push(if option.starts_with("-s") || option.starts_with("--s") {
                    Match::Source { net, negate }
                } else {
                    Match::Destination { net, negate }
                });
                &tail[1..]
            }
            "-i" | "--in-interface" | "-o" | "--out-interface" => {
                let name = interface(&value(tail)?)?;
                // Written as one interface: a trailing `+` would be
                // iptables' wildcard under the iptables layout.
                cni_netfilter::iptables::literal_ifname(&name).map_err(|e| NotUnderstood(e.to_string()))?;
                out.push(if option.starts_with("-i") || option.starts_with("--i") {
                    Match::InInterface { name, negate }
                } else {
                    Match::OutInterface { name, negate }
                });
                &tail[1..]
            }
            "-m" if !negate && tail.first() == Some(&"mark") => {
                let (negate, tail) = match &tail[1..] {
                    ["!", tail @ ..] => (true, tail),
                    tail => (false, tail),
                };
                match tail {
                    ["--mark", value, tail @ ..] => {
                        if negate {
                            return Err(NotUnderstood("a negated mark is not understood".into()));
                        }
                        out.push(mark(value)?);
                        tail
                    }
                    _ => return Err(NotUnderstood("-m mark needs --mark VALUE[/MASK]".into())),
                }
            }
            other => return Err(NotUnderstood(format!("{other:?} is not understood here (only -s, -d, -i, -o and -m mark, each with ! before it)"))),
        };
    }
    Ok(out)
}

/// nft rule text: `ip|ip6 saddr|daddr [!=] ADDR[/LEN]`,
/// `iifname|oifname [!=] NAME`, `meta mark VALUE` or
/// `meta mark and MASK == VALUE`.
fn nftables(words: &[&str], ip: IpFamily) -> Result<Vec<Match>, NotUnderstood> {
    let mut out = Vec::new();
    let mut rest = words;
    let negation = |tail: &[&str]| -> (bool, usize) {
        match tail.first() {
            Some(&"!=") => (true, 1),
            Some(&"==") => (false, 1),
            _ => (false, 0),
        }
    };
    while !rest.is_empty() {
        rest = match rest {
            [family @ ("ip" | "ip6"), key @ ("saddr" | "daddr"), tail @ ..] => {
                if (*family == "ip6") != (ip == IpFamily::V6) {
                    return Err(NotUnderstood(format!("{family} {key} in conditions of the other family")));
                }
                let (negate, skip) = negation(tail);
                let text = tail.get(skip).ok_or(NotUnderstood(format!("{family} {key} needs a value")))?;
                let net = network(text)?;
                out.push(if *key == "saddr" {
                    Match::Source { net, negate }
                } else {
                    Match::Destination { net, negate }
                });
                &tail[skip + 1..]
            }
            [key @ ("iifname" | "oifname"), tail @ ..] => {
                let (negate, skip) = negation(tail);
                let text = tail.get(skip).ok_or(NotUnderstood(format!("{key} needs a name")))?;
                let name = interface(text.trim_matches('"'))?;
                out.push(if *key == "iifname" {
                    Match::InInterface { name, negate }
                } else {
                    Match::OutInterface { name, negate }
                });
                &tail[skip + 1..]
            }
            ["meta", "mark", "and", mask, "==", value, tail @ ..] => {
                out.push(Match::Mark {
                    value: number(value)?,
                    mask: number(mask)?,
                });
                tail
            }
            ["meta", "mark", tail @ ..] => {
                let (negate, skip) = negation(tail);
                if negate {
                    return Err(NotUnderstood("a negated mark is not understood".into()));
                }
                let text = tail
                    .get(skip)
                    .ok_or_else(|| NotUnderstood("meta mark needs a value".into()))?;
                out.push(Match::Mark {
                    value: number(text)?,
                    mask: u32::MAX,
                });
                &tail[skip + 1..]
            }
            [other, ..] => return Err(NotUnderstood(format!("{other:?} is not understood here (only ip/ip6 saddr/daddr, iifname, oifname and meta mark, with != for negation)"))),
            [] => break,
        };
    }
    Ok(out)
}

/// An address or a prefix; a bare address is a full-length prefix.
fn network(text: &str) -> Result<IpNetwork, NotUnderstood> {
    let bad = || NotUnderstood(format!("{text:?} is not an address or prefix"));
    match text.split_once('/') {
        Some(_) => {
            let net: IpNetwork = text.parse().map_err(|_| bad())?;
            // Host bits are cleared, as iptables and nft do.
            Ok(net.subnet())
        }
        None => {
            let ip: IpAddr = text.parse().map_err(|_| bad())?;
            Ok(IpNetwork::host(ip))
        }
    }
}

fn interface(name: &str) -> Result<String, NotUnderstood> {
    cni_net::validate_ifname(name)
        .map(|()| name.to_string())
        .map_err(|e| NotUnderstood(format!("{name:?}: {e}")))
}

/// `VALUE` or `VALUE/MASK`, each decimal or `0x` hex.
fn mark(text: &str) -> Result<Match, NotUnderstood> {
    let (value, mask) = match text.split_once('/') {
        Some((value, mask)) => (number(value)?, number(mask)?),
        None => (number(text)?, u32::MAX),
    };
    Ok(Match::Mark { value, mask })
}

fn number(text: &str) -> Result<u32, NotUnderstood> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| NotUnderstood(format!("{text:?} is not a 32-bit number")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    #[test]
    fn the_backend_is_guessed_from_the_first_condition_as_the_reference_does() {
        assert_eq!(backend_of(&[]), None);
        assert_eq!(backend_of(&strings(&["", "-d"])), None);
        assert_eq!(
            backend_of(&strings(&["-d", "1.2.3.4"])),
            Some(BackendKind::Iptables)
        );
        assert_eq!(
            backend_of(&strings(&["!", "-i", "eth0"])),
            Some(BackendKind::Iptables)
        );
        assert_eq!(
            backend_of(&strings(&["ip daddr 1.2.3.4"])),
            Some(BackendKind::Nftables)
        );
    }

    #[test]
    fn common_iptables_conditions_become_matches_in_iptables_save_order() {
        let got = parse(
            "conditionsV4",
            &strings(&[
                "-m",
                "mark",
                "--mark",
                "0x10/0xff",
                "!",
                "-i",
                "eth0",
                "-d",
                "192.168.1.0/24",
                "-s 10.0.0.1",
            ]),
            BackendKind::Iptables,
            IpFamily::V4,
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Match::source(net("10.0.0.1/32")),
                Match::destination(net("192.168.1.0/24")),
                Match::InInterface {
                    name: "eth0".into(),
                    negate: true
                },
                Match::Mark {
                    value: 0x10,
                    mask: 0xff
                },
            ]
        );
    }

    #[test]
    fn common_nft_conditions_become_the_same_matches() {
        let got = parse(
            "conditionsV6",
            &strings(&["ip6 daddr != fd00::/64", "oifname \"eth1\"", "meta mark 16"]),
            BackendKind::Nftables,
            IpFamily::V6,
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Match::not_destination(net("fd00::/64")),
                Match::OutInterface {
                    name: "eth1".into(),
                    negate: false
                },
                Match::Mark {
                    value: 16,
                    mask: u32::MAX
                },
            ]
        );
    }

    #[test]
    fn conditions_that_cannot_be_used_are_refused_naming_the_field_and_the_condition() {
        for (list, backend, ip) in [
            (vec!["-p", "tcp"], BackendKind::Iptables, IpFamily::V4),
            (vec!["-d"], BackendKind::Iptables, IpFamily::V4),
            (vec!["-d", "not-an-ip"], BackendKind::Iptables, IpFamily::V4),
            (vec!["-d", "fd00::1"], BackendKind::Iptables, IpFamily::V4),
            (
                vec!["-i", "a-name-longer-than-15"],
                BackendKind::Iptables,
                IpFamily::V4,
            ),
            (vec!["-j", "DROP"], BackendKind::Iptables, IpFamily::V4),
            (vec!["-i", "cni+"], BackendKind::Iptables, IpFamily::V4),
            (vec!["!", "-o", "+"], BackendKind::Iptables, IpFamily::V4),
            (vec!["tcp dport 80"], BackendKind::Nftables, IpFamily::V4),
            (
                vec!["ip saddr 10.0.0.1"],
                BackendKind::Nftables,
                IpFamily::V6,
            ),
            (
                vec!["meta mark 0x1ffffffff"],
                BackendKind::Nftables,
                IpFamily::V4,
            ),
        ] {
            let err = parse("conditionsV4", &strings(&list), backend, ip).unwrap_err();
            assert_eq!(
                err.code,
                cni_types::Code::INVALID_NETWORK_CONFIG,
                "{list:?}"
            );
            assert_eq!(err.msg, "invalid conditionsV4", "{list:?}");
        }
    }
}
