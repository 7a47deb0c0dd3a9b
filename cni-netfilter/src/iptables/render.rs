//! A [`Rule`] as iptables arguments, in the order `iptables-save` prints
//! them back.

use cni_types::{IpFamily, IpNetwork};

use crate::rule::{validate_comment, validate_ifname};
use crate::{Action, BackendKind, Family, FilterError, Match, Protocol, Rule};

/// The longest comment the comment match takes (`XT_MAX_COMMENT_LEN`
/// less its NUL).
pub const MAX_COMMENT_LEN: usize = 255;

/// The rule's arguments after `-A CHAIN`: the address, interface and
/// protocol matches first, then the comment, then the other matches in
/// their order, then the target. The reference puts `-m comment` before
/// its other extension matches (portmap) or after the addresses (ipmasq);
/// both print back as this order.
pub(crate) fn render(rule: &Rule, family: Family) -> Result<Vec<String>, FilterError> {
    let mut basic = Vec::new();
    let mut extensions = Vec::new();
    let mut protocol: Option<Protocol> = None;
    let mut seen = Vec::new();
    for condition in &rule.matches {
        let option = match condition {
            Match::Source { net, negate } => address(&mut basic, "-s", net, *negate, family)?,
            Match::Destination { net, negate } => address(&mut basic, "-d", net, *negate, family)?,
            Match::InInterface { name, negate } => interface(&mut basic, "-i", name, *negate)?,
            Match::OutInterface { name, negate } => interface(&mut basic, "-o", name, *negate)?,
            Match::Protocol(p) => {
                protocol = Some(*p);
                basic.extend(["-p".to_string(), protocol_name(*p).to_string()]);
                "-p"
            }
            Match::SourcePort(port) | Match::DestinationPort(port) => {
                let Some(p) = protocol.filter(|p| p.has_ports()) else {
                    return Err(FilterError::invalid(
                        "port match",
                        port.to_string(),
                        "needs a TCP, UDP or SCTP protocol match before it",
                    ));
                };
                let flag = if matches!(condition, Match::SourcePort(_)) {
                    "--sport"
                } else {
                    "--dport"
                };
                extensions.extend(["-m", p.as_str(), flag].map(String::from));
                extensions.push(port.to_string());
                flag
            }
            Match::DestinationPorts(ports) => {
                if !protocol.is_some_and(|p| p.has_ports()) || ports.is_empty() {
                    return Err(FilterError::invalid(
                        "port list",
                        format!("{ports:?}"),
                        "needs ports and a TCP, UDP or SCTP protocol match before it",
                    ));
                }
                let list: Vec<_> = ports.iter().map(u16::to_string).collect();
                extensions.extend(["-m", "multiport", "--dports"].map(String::from));
                extensions.push(list.join(","));
                "--dports"
            }
            Match::LocalDestination => {
                extensions.extend(["-m", "addrtype", "--dst-type", "LOCAL"].map(String::from));
                "--dst-type"
            }
            Match::Unicast => {
                extensions.extend(["-m", "pkttype", "--pkt-type", "unicast"].map(String::from));
                "--pkt-type"
            }
            Match::Mark { value, mask } => {
                extensions.extend(["-m", "mark", "--mark"].map(String::from));
                // As iptables-save prints it: no mask when all bits count.
                extensions.push(if *mask == u32::MAX {
                    format!("{value:#x}")
                } else {
                    format!("{value:#x}/{mask:#x}")
                });
                "--mark"
            }
            Match::CtState(states) => {
                // In the order `iptables-save` prints them, so a rule
                // listed back compares equal (`--ctstate NEW,INVALID` is
                // printed `INVALID,NEW`).
                let mut names: Vec<_> = states.iter().map(|s| s.iptables_name()).collect();
                let order = ["INVALID", "NEW", "RELATED", "ESTABLISHED"];
                names.sort_by_key(|n| order.iter().position(|o| o == n));
                names.dedup();
                if names.is_empty() {
                    return Err(FilterError::invalid("ct state", "[]", "names no state"));
                }
                extensions.extend(["-m", "conntrack", "--ctstate"].map(String::from));
                extensions.push(names.join(","));
                "--ctstate"
            }
            other => {
                return Err(FilterError::Unsupported {
                    backend: BackendKind::Iptables,
                    what: format!("{other:?} (a named set)"),
                })
            }
        };
        if seen.contains(&option) {
            return Err(FilterError::Unsupported {
                backend: BackendKind::Iptables,
                what: format!("two {option} matches in one rule"),
            });
        }
        seen.push(option);
    }
    let mut args = basic;
    if let Some(comment) = &rule.comment {
        validate_comment(comment, MAX_COMMENT_LEN, true)?;
        args.extend(["-m", "comment", "--comment"].map(String::from));
        args.push(comment.clone());
    }
    args.extend(extensions);
    if let Some(action) = &rule.action {
        target(&mut args, action, family)?;
    }
    Ok(args)
}

fn address(
    args: &mut Vec<String>,
    flag: &'static str,
    net: &IpNetwork,
    negate: bool,
    family: Family,
) -> Result<&'static str, FilterError> {
    check_family(family, net.family(), &net.to_string())?;
    if negate {
        args.push("!".into());
    }
    args.push(flag.into());
    args.push(format!("{}/{}", net.network(), net.prefix()));
    Ok(flag)
}

/// Checks that iptables reads `name` as that one interface: a valid name
/// (1 to 15 printable bytes) that does not end with `+`, which iptables reads
/// as a wildcard (`-i cni+` is every link whose name starts with `cni`,
/// and `-i +` every link, a rule `iptables-save` then prints without
/// `-i`, so it could never be found again to be deleted). The kernel
/// allows such link names; the iptables layouts refuse them, code 7,
/// before anything changes. nftables compares the whole name, so its
/// layouts take them.
///
/// Go: none; the reference writes the name as given.
pub fn literal_ifname(name: &str) -> Result<(), FilterError> {
    validate_ifname(name)?;
    if name.ends_with('+') {
        return Err(FilterError::invalid(
            "interface name",
            name,
            "ends with '+', which iptables reads as a wildcard matching other interfaces; \
             use the nftables backend for such a name",
        ));
    }
    Ok(())
}

fn interface(
    args: &mut Vec<String>,
    flag: &'static str,
    name: &str,
    negate: bool,
) -> Result<&'static str, FilterError> {
    literal_ifname(name)?;
    if negate {
        args.push("!".into());
    }
    args.extend([flag.to_string(), name.to_string()]);
    Ok(flag)
}

fn target(args: &mut Vec<String>, action: &Action, family: Family) -> Result<(), FilterError> {
    let words: Vec<String> = match action {
        Action::Accept => vec!["-j".into(), "ACCEPT".into()],
        Action::Drop => vec!["-j".into(), "DROP".into()],
        Action::Return => vec!["-j".into(), "RETURN".into()],
        Action::Jump(chain) => vec!["-j".into(), chain.clone()],
        Action::Goto(chain) => vec!["-g".into(), chain.clone()],
        Action::Dnat { addr, port } | Action::Snat { addr, port } => {
            // An IPv4-mapped address is IPv4, as in the reference (Go's
            // `To4`), and written so.
            let addr = addr.to_canonical();
            let ip = IpFamily::of(addr);
            check_family(family, ip, &addr.to_string())?;
            let to = match (ip, port) {
                (_, None) => addr.to_string(),
                (IpFamily::V4, Some(port)) => format!("{addr}:{port}"),
                (IpFamily::V6, Some(port)) => format!("[{addr}]:{port}"),
            };
            let (name, flag) = match action {
                Action::Dnat { .. } => ("DNAT", "--to-destination"),
                _ => ("SNAT", "--to-source"),
            };
            vec!["-j".into(), name.into(), flag.into(), to]
        }
        Action::Masquerade => vec!["-j".into(), "MASQUERADE".into()],
        Action::SetMark { value, mask } => vec![
            "-j".into(),
            "MARK".into(),
            "--set-xmark".into(),
            format!("{value:#x}/{mask:#x}"),
        ],
    };
    args.extend(words);
    Ok(())
}

fn check_family(family: Family, ip: IpFamily, what: &str) -> Result<(), FilterError> {
    if family.carries(ip) {
        Ok(())
    } else {
        Err(FilterError::invalid(
            "address",
            what,
            format!("is not of the {family} family"),
        ))
    }
}

/// The names iptables knows without `/etc/protocols` (minimal hosts lack it).
fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Icmpv6 => "icmpv6",
        other => other.as_str(),
    }
}

/// One `iptables-restore` line: words joined by spaces, a word with a
/// space, quote or backslash in double quotes with `\"` and `\\`.
pub(crate) fn line(words: &[String]) -> String {
    words
        .iter()
        .map(|word| {
            if word.is_empty() || word.contains([' ', '"', '\\', '\'']) {
                format!("\"{}\"", word.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                word.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(rule: Rule, family: Family) -> String {
        line(&render(&rule, family).unwrap())
    }

    #[test]
    fn rules_render_as_the_reference_plugins_write_them() {
        // portmap's DNAT rule in its per-container chain.
        let dnat = Rule::new("CNI-DN-x")
            .matching(Match::Protocol(Protocol::Tcp))
            .matching(Match::DestinationPort(8080))
            .then(Action::Dnat {
                addr: "10.88.0.5".parse().unwrap(),
                port: Some(80),
            });
        assert_eq!(
            rendered(dnat, Family::Ip),
            "-p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.88.0.5:80"
        );
        // portmap's entry rule: comment before the multiport match.
        let entry = Rule::new("CNI-HOSTPORT-DNAT")
            .matching(Match::Protocol(Protocol::Tcp))
            .matching(Match::DestinationPorts(vec![8080, 8081]))
            .then(Action::Jump("CNI-DN-x".into()))
            .comment("dnat name: \"cni0\" id: \"abc\"");
        assert_eq!(
            rendered(entry, Family::Ip),
            r#"-p tcp -m comment --comment "dnat name: \"cni0\" id: \"abc\"" -m multiport --dports 8080,8081 -j CNI-DN-x"#
        );
        // ipmasq's masquerade rule, with its comment after the address.
        let masq = Rule::new("CNI-x")
            .matching(Match::not_destination("224.0.0.0/4".parse().unwrap()))
            .then(Action::Masquerade)
            .comment("name: \"cni0\" id: \"abc\"");
        assert_eq!(
            rendered(masq, Family::Ip),
            r#"! -d 224.0.0.0/4 -m comment --comment "name: \"cni0\" id: \"abc\"" -j MASQUERADE"#
        );
        let v6 = Rule::new("c")
            .matching(Match::LocalDestination)
            .matching(Match::Mark {
                value: 0x2000,
                mask: 0x2000,
            })
            .then(Action::Dnat {
                addr: "fd00::5".parse().unwrap(),
                port: Some(80),
            });
        assert_eq!(
            rendered(v6, Family::Ip6),
            "-m addrtype --dst-type LOCAL -m mark --mark 0x2000/0x2000 -j DNAT --to-destination [fd00::5]:80"
        );
    }

    #[test]
    fn an_ipv4_mapped_nat_address_is_ipv4_as_go_reads_it() {
        let dnat = Rule::new("c").then(Action::Dnat {
            addr: "::ffff:10.88.0.5".parse().unwrap(),
            port: Some(80),
        });
        assert_eq!(
            rendered(dnat.clone(), Family::Ip),
            "-j DNAT --to-destination 10.88.0.5:80"
        );
        assert!(render(&dnat, Family::Ip6).is_err());
    }

    #[test]
    fn what_iptables_cannot_say_is_refused_before_running_it() {
        let set = Rule::new("c").matching(Match::SourceInSet {
            set: "s".into(),
            family: IpFamily::V4,
            negate: false,
        });
        assert!(matches!(
            render(&set, Family::Ip),
            Err(FilterError::Unsupported { .. })
        ));
        let two = Rule::new("c")
            .matching(Match::source("10.0.0.1/32".parse().unwrap()))
            .matching(Match::source("10.0.0.2/32".parse().unwrap()));
        assert!(render(&two, Family::Ip)
            .unwrap_err()
            .to_string()
            .contains("two -s matches"));
        let newline = Rule::new("c").comment("a\nb");
        assert!(render(&newline, Family::Ip).is_err());
    }
}
