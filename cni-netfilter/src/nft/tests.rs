//! Our bytes against nft's own: each line of
//! `tests/fixtures/rule_bytes.txt` is a rule as given to `nft add rule`
//! and the NEWRULE payload nft 1.0.6 sent for it (recorded from
//! `nft --debug=mnl` by `tests/fixtures/record_rule_bytes.sh`). The same
//! rule described as a [`Rule`] must encode to exactly those bytes.

use cni_types::IpNetwork;

use super::compile::compile;
use super::expr::Expr;
use super::message::{new_rule, nfproto};
use crate::{Action, CtState as Ct, Family, Match, Protocol as P, Rule, Table};

const RECORDED: &str = include_str!("../../tests/fixtures/rule_bytes.txt");

fn net(text: &str) -> IpNetwork {
    let text = if text.contains('/') {
        text.to_string()
    } else if text.contains(':') {
        format!("{text}/128")
    } else {
        format!("{text}/32")
    };
    text.parse().unwrap()
}

fn iface(name: &str, negate: bool) -> (String, bool) {
    (name.to_string(), negate)
}

/// The rules of the fixture, as this crate describes them.
fn described() -> Vec<(&'static str, Family, Rule)> {
    use Action::*;
    use Match::*;
    let c = || Rule::new("c");
    let tcp = Protocol(P::Tcp);
    let udp = Protocol(P::Udp);
    let (in0, out0) = (iface("veth0", false), iface("eth0", true));
    let dnat = |addr: &str, port| Dnat {
        addr: addr.parse().unwrap(),
        port: Some(port),
    };
    let snat = |addr: &str| Snat {
        addr: addr.parse().unwrap(),
        port: None,
    };
    vec![
        (
            "ip t c jump other",
            Family::Ip,
            c().then(Jump("other".into())),
        ),
        (
            "ip t c goto other",
            Family::Ip,
            c().then(Goto("other".into())),
        ),
        ("ip t c accept", Family::Ip, c().then(Accept)),
        ("ip t c drop", Family::Ip, c().then(Drop)),
        ("ip t c return", Family::Ip, c().then(Return)),
        (
            "ip t c fib daddr type local jump other",
            Family::Ip,
            c().matching(LocalDestination).then(Jump("other".into())),
        ),
        (
            "ip t c tcp dport 8080 dnat to 10.88.0.5:80 comment \"abc\"",
            Family::Ip,
            c().matching(tcp.clone())
                .matching(DestinationPort(8080))
                .then(dnat("10.88.0.5", 80))
                .comment("abc"),
        ),
        (
            "ip t c ip daddr 192.168.1.1 udp dport 53 dnat to 10.88.0.5:5353 comment \"abc\"",
            Family::Ip,
            c().matching(Match::destination(net("192.168.1.1")))
                .matching(udp.clone())
                .matching(DestinationPort(53))
                .then(dnat("10.88.0.5", 5353))
                .comment("abc"),
        ),
        (
            "ip t c ip saddr 10.88.0.5 ip daddr 10.88.0.5 masquerade comment \"abc\"",
            Family::Ip,
            c().matching(Match::source(net("10.88.0.5")))
                .matching(Match::destination(net("10.88.0.5")))
                .then(Masquerade)
                .comment("abc"),
        ),
        (
            "ip t c ip saddr 0.0.0.0/0 ip daddr 10.88.0.5 masquerade",
            Family::Ip,
            c().matching(Match::source(net("0.0.0.0/0")))
                .matching(Match::destination(net("10.88.0.5")))
                .then(Masquerade),
        ),
        (
            "ip t c ip daddr 10.0.0.1 snat to 192.168.0.1",
            Family::Ip,
            c().matching(Match::destination(net("10.0.0.1")))
                .then(snat("192.168.0.1")),
        ),
        (
            "ip t c ip saddr 10.1.0.0/20 counter accept",
            Family::Ip,
            c().matching(Match::source(net("10.1.0.0/20")))
                .counted()
                .then(Accept),
        ),
        (
            "ip t c iifname \"veth0\" oifname != \"eth0\" drop",
            Family::Ip,
            c().matching(InInterface {
                name: in0.0,
                negate: in0.1,
            })
            .matching(OutInterface {
                name: out0.0,
                negate: out0.1,
            })
            .then(Drop),
        ),
        (
            "ip t c meta mark and 0x2000 == 0x2000 masquerade",
            Family::Ip,
            c().matching(Mark {
                value: 0x2000,
                mask: 0x2000,
            })
            .then(Masquerade),
        ),
        (
            "ip t c meta mark set meta mark or 0x2000",
            Family::Ip,
            c().then(SetMark {
                value: 0x2000,
                mask: 0x2000,
            }),
        ),
        (
            "ip t c meta mark set 0x4000",
            Family::Ip,
            c().then(SetMark {
                value: 0x4000,
                mask: u32::MAX,
            }),
        ),
        (
            "ip t c ct state established,related accept",
            Family::Ip,
            c().matching(CtState(vec![Ct::Established, Ct::Related]))
                .then(Accept),
        ),
        (
            "ip t c ct state new counter",
            Family::Ip,
            c().matching(CtState(vec![Ct::New])).counted(),
        ),
        (
            "ip6 t c tcp dport 8080 dnat to [fd00::5]:80 comment \"abc\"",
            Family::Ip6,
            c().matching(tcp)
                .matching(DestinationPort(8080))
                .then(dnat("fd00::5", 80))
                .comment("abc"),
        ),
        (
            "ip6 t c ip6 saddr fd00::5 ip6 daddr fd00::5 masquerade comment \"abc\"",
            Family::Ip6,
            c().matching(Match::source(net("fd00::5")))
                .matching(Match::destination(net("fd00::5")))
                .then(Masquerade)
                .comment("abc"),
        ),
        (
            "ip6 t c ip6 daddr fd00::1 snat to fd00::2",
            Family::Ip6,
            c().matching(Match::destination(net("fd00::1")))
                .then(snat("fd00::2")),
        ),
        (
            "inet t c ip daddr 224.0.0.0/4 return",
            Family::Inet,
            c().matching(Match::destination(net("224.0.0.0/4")))
                .then(Return),
        ),
        (
            "inet t c ip6 daddr ff00::/8 return",
            Family::Inet,
            c().matching(Match::destination(net("ff00::/8")))
                .then(Return),
        ),
        (
            "inet t c ip saddr 10.88.0.5 ip daddr != 10.88.0.0/16 masquerade comment \"xyz\"",
            Family::Inet,
            c().matching(Match::source(net("10.88.0.5")))
                .matching(Match::not_destination(net("10.88.0.0/16")))
                .then(Masquerade)
                .comment("xyz"),
        ),
        (
            "inet t c ip6 saddr fd00::5 ip6 daddr != fd00::/64 masquerade comment \"xyz\"",
            Family::Inet,
            c().matching(Match::source(net("fd00::5")))
                .matching(Match::not_destination(net("fd00::/64")))
                .then(Masquerade)
                .comment("xyz"),
        ),
        (
            "inet t c ip saddr @allowed accept",
            Family::Inet,
            c().matching(SourceInSet {
                set: "allowed".into(),
                ipv6: false,
                negate: false,
            })
            .then(Accept),
        ),
        (
            "inet t c ip daddr != @allowed drop",
            Family::Inet,
            c().matching(DestinationInSet {
                set: "allowed".into(),
                ipv6: false,
                negate: true,
            })
            .then(Drop),
        ),
        (
            "inet t c udp sport 53 accept",
            Family::Inet,
            c().matching(udp).matching(SourcePort(53)).then(Accept),
        ),
    ]
}

/// Our NEWRULE payload: `nfgenmsg`, then the attributes.
fn encoded(family: Family, rule: &Rule) -> Vec<u8> {
    let mut exprs = compile(rule, family).unwrap();
    // nft also names a set by its id in the batch that loaded its cache.
    for expr in &mut exprs {
        if let Expr::Lookup { set_id, .. } = expr {
            *set_id = Some(1);
        }
    }
    let table = Table::new(family, "t");
    let req = new_rule(&table, &rule.chain, &exprs, rule.comment.as_deref()).unwrap();
    let mut payload = vec![nfproto(family), 0, 0, 0];
    payload.extend_from_slice(&req.attrs.buf);
    payload
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn every_rule_encodes_to_the_bytes_nft_sends_for_it() {
    let recorded: Vec<(&str, &str)> = RECORDED
        .lines()
        .map(|line| line.split_once('\t').expect("rule TAB hex"))
        .collect();
    let described = described();
    assert_eq!(
        recorded.iter().map(|(text, _)| *text).collect::<Vec<_>>(),
        described.iter().map(|(text, ..)| *text).collect::<Vec<_>>(),
        "the fixture and this table list the same rules"
    );
    for ((text, nft), (_, family, rule)) in recorded.iter().zip(&described) {
        assert_eq!(hex(&encoded(*family, rule)), *nft, "{text}");
    }
}

#[test]
fn rules_a_table_cannot_hold_are_refused_before_encoding() {
    let v6_in_ip = Rule::new("c").matching(Match::source("fd00::1/128".parse().unwrap()));
    let err = compile(&v6_in_ip, Family::Ip).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid address \"fd00::1/128\": is not of the ip family"
    );
    let port_alone = Rule::new("c").matching(Match::DestinationPort(80));
    assert!(compile(&port_alone, Family::Ip)
        .unwrap_err()
        .to_string()
        .contains("needs a TCP"));
    let icmp_port = Rule::new("c")
        .matching(Match::Protocol(P::Icmp))
        .matching(Match::DestinationPort(80));
    assert!(compile(&icmp_port, Family::Ip).is_err());
    let long_if = Rule::new("c").matching(Match::InInterface {
        name: "x".repeat(16),
        negate: false,
    });
    assert!(compile(&long_if, Family::Inet).is_err());
    let v4_dnat_in_ip6 = Rule::new("c").then(Action::Dnat {
        addr: "10.0.0.1".parse().unwrap(),
        port: None,
    });
    assert!(compile(&v4_dnat_in_ip6, Family::Ip6).is_err());
}
