//! Our bytes against nft's own: each line of
//! `tests/fixtures/rule_bytes.txt` is a rule as given to `nft add rule`
//! and the NEWRULE payload nft 1.0.6 sent for it (recorded from
//! `nft --debug=mnl` by `tests/fixtures/record_rule_bytes.sh`). The same
//! rule described as a [`Rule`] must encode to exactly those bytes.

use super::compile::compile;
use super::expr::Expr;
use super::message::{new_rule, nfproto};
use crate::{Action, CtState as Ct, Family, Match, Protocol as P, Rule, Table};

const RECORDED: &str = include_str!("../../tests/fixtures/rule_bytes.txt");

// `described()`: the fixture's rules as this crate describes them,
// shared with the root test that loads both into the kernel.
include!("../../tests/fixtures/described.rs");

/// The id nft gave a looked-up set in its batch, from its own counter
/// (1 unless listed): a batch-local number, so ours is set to match.
const NFT_SET_IDS: [(&str, u32); 2] = [
    ("ip t c tcp dport { 8080, 8081 } accept", 2),
    ("inet t c udp dport { 53, 5353 } accept", 3),
];

/// Our NEWRULE payload: `nfgenmsg`, then the attributes.
fn encoded(text: &str, family: Family, rule: &Rule) -> Vec<u8> {
    let mut exprs = compile(rule, family).unwrap().exprs;
    let id = NFT_SET_IDS
        .iter()
        .find(|(t, _)| *t == text)
        .map_or(1, |(_, id)| *id);
    for expr in &mut exprs {
        if let Expr::Lookup { set_id, .. } = expr {
            *set_id = Some(id);
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
        assert_eq!(hex(&encoded(text, *family, rule)), *nft, "{text}");
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

#[test]
fn an_ipv4_mapped_nat_address_is_ipv4_as_go_reads_it() {
    let dnat = |addr: &str| {
        let rule = Rule::new("c").then(Action::Dnat {
            addr: addr.parse().unwrap(),
            port: Some(80),
        });
        compile(&rule, Family::Ip).map(|c| c.exprs)
    };
    assert_eq!(dnat("::ffff:10.0.0.1").unwrap(), dnat("10.0.0.1").unwrap());
}

/// What the retry of a listing transaction relies on: a batch tied to a
/// generation that has passed is refused whole, at its begin message,
/// with `ERESTART`.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_batch_tied_to_a_past_generation_is_refused_whole() {
    use super::message::{new_table, Batch};
    use super::socket::NftSocket;

    let netns = cni_net::testing::TempNetns::new("nf-genid").unwrap();
    let refusal = netns
        .run(|_| {
            let mut socket = NftSocket::open()?;
            let listed = socket.generation()?;
            let send = |socket: &mut NftSocket, name: &str, genid| {
                let mut batch = Batch::new(socket.reserve(2), Some(genid));
                batch
                    .push(
                        new_table(&Table::new(Family::Ip, name)).unwrap(),
                        "add",
                        name.into(),
                    )
                    .unwrap();
                socket.send_batch(&batch.finish(true)).unwrap()
            };
            assert_eq!(send(&mut socket, "first", listed), None);
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(send(&mut socket, "second", listed))
        })
        .unwrap();
    let refusal = refusal.expect("the second batch is refused");
    assert_eq!((refusal.index, refusal.errno), (0, 85));
}

/// What bursts of pods rely on: each netfilter socket a plugin closes can
/// wait a grace period, so a process keeps one socket of its own
/// namespace for every use there; never one of a namespace a thread
/// entered (it would keep that namespace alive), never one whose last
/// answer was left unread.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_socket_is_reused_only_in_the_process_namespace_and_only_once_its_answers_are_read() {
    use super::message::{encode, Kind, NLM_F_REQUEST};
    use super::socket::NftSocket;

    let opened = || {
        let mut socket = NftSocket::open().unwrap();
        socket.generation().unwrap();
        let port = socket.inode().unwrap();
        (socket, port)
    };
    let (first, kept) = opened();
    drop(first);
    let (second, port) = opened();
    assert_eq!(port, kept, "the process's namespace: the same socket");
    drop(second);

    let netns = cni_net::testing::TempNetns::new("nf-spare").unwrap();
    let (inside, again) = netns
        .run(|_| {
            let (first, port) = opened();
            drop(first);
            Ok::<_, cni_net::NetError>((port, opened().1))
        })
        .unwrap();
    assert_ne!(inside, again, "another namespace's socket is closed");
    assert!(![inside, again].contains(&kept));

    let (mut unread, port) = opened();
    assert_eq!(port, kept, "the host's spare stayed");
    let mut request = Vec::new();
    let seq = unread.reserve(0);
    encode(
        &mut request,
        Kind::GetGen.message_type(),
        NLM_F_REQUEST,
        seq,
        0,
        0,
        &[],
    );
    unread.send(&request).unwrap();
    drop(unread);
    assert_ne!(opened().1, kept, "an answer left unread: a new socket");

    // Two at once: the first dropped is kept, the second closed.
    let (one, one_port) = opened();
    let (two, two_port) = opened();
    assert_ne!(one_port, two_port);
    drop(one);
    drop(two);
    assert_eq!(opened().1, one_port, "one socket kept per process");
}

#[test]
fn a_rule_jumps_to_a_chain_only_by_its_verdict() {
    use super::keys::Verdict;
    let listed = |exprs: &[Expr]| {
        let mut list = super::nla::Attrs::default();
        exprs.iter().for_each(|e| e.encode(&mut list));
        list.buf
    };
    let jump = listed(&[Expr::Verdict(Verdict::Jump("CNI-DN-1".into()))]);
    assert!(super::jumps_to(&jump, "CNI-DN-1").unwrap());
    assert!(!super::jumps_to(&jump, "CNI-DN-2").unwrap());
    assert!(
        !super::jumps_to(&jump, "CNI-DN-").unwrap(),
        "a prefix is another chain"
    );
    let goto = listed(&[Expr::Verdict(Verdict::Goto("CNI-DN-1".into()))]);
    assert!(super::jumps_to(&goto, "CNI-DN-1").unwrap());
    // The chain's name as data, not as a verdict: no jump.
    let data = listed(&[
        Expr::Immediate {
            dreg: super::keys::Register::R1,
            data: b"CNI-DN-1\0".to_vec(),
        },
        Expr::Verdict(Verdict::Accept),
    ]);
    assert!(!super::jumps_to(&data, "CNI-DN-1").unwrap());
    assert!(super::jumps_to(&jump[..jump.len() - 4], "CNI-DN-1").is_err());
}

/// What reading echoes relies on: no more of them than the receive
/// buffer holds, or an overflow could hide the batch's answer.
#[test]
fn a_batch_asking_for_more_echoes_than_the_socket_holds_is_refused_unsent() {
    use super::message::{new_rule, Batch};
    use super::socket::NftSocket;
    use super::MAX_RECORDED_RULES;

    let mut socket = NftSocket::open().unwrap();
    let table = Table::new(Family::Ip, "echoes");
    let mut batch = Batch::new(socket.reserve(70), None).echoing_rules();
    for _ in 0..=MAX_RECORDED_RULES {
        let rule = new_rule(&table, "c", &[], None).unwrap();
        batch.push(rule, "add rule to", "chain c".into()).unwrap();
    }
    let err = socket
        .send_batch_echoed(&batch.finish(true), &mut Vec::new())
        .unwrap_err();
    assert!(err.to_string().contains("echoes of 65 rules"), "{err}");
}

/// A DEL's look for its needles acts on a dump another pod's commit
/// interrupted; a needle that dump missed (a rule moved across a part's
/// edge) is looked for again in a whole listing, never reported absent.
#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_needle_an_interrupted_dump_missed_is_looked_for_again_whole() {
    use super::socket::MISSED_IN_NEXT_AS_SEEN;
    use super::NftBackend;
    use crate::{Backend, Chain, Transaction};

    let netns = cni_net::testing::TempNetns::new("nf-missed").unwrap();
    let table = Table::new(Family::Ip, "t");
    let (found, seam_used) = netns
        .run(|_| {
            let mut nft = NftBackend::open()?;
            let mut tx = Transaction::new(table.clone());
            tx.ensure_table().ensure_chain(Chain::new("c"));
            for (port, ctr) in [(1, "ctr-a"), (2, "ctr-b"), (3, "ctr-c")] {
                tx.add_rule(
                    Rule::new("c")
                        .matching(Match::Protocol(P::Tcp))
                        .matching(Match::DestinationPort(port))
                        .then(Action::Accept)
                        .comment(ctr),
                );
            }
            nft.apply(&tx)?;
            // The dump's second reply: ctr-b's rule.
            MISSED_IN_NEXT_AS_SEEN.set(Some(1));
            let found = nft.table_mentions_each(&table, &[b"ctr-a", b"ctr-b", b"ctr-none"])?;
            let seam_used = MISSED_IN_NEXT_AS_SEEN.get().is_none();
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>((found, seam_used))
        })
        .unwrap();
    assert!(seam_used, "the look went through an as-seen dump");
    assert_eq!(found, vec![true, true, false]);
}
