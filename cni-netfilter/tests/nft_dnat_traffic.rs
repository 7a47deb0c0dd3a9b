//! Real packets through a rule the nftables backend rendered: a TCP
//! connection to the host's port 8080 reaches a listener in another
//! namespace, as portmap's DNAT makes it (needs root; all traffic stays in
//! the test's two namespaces).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use cni_net::{Dad, Netlink};
use cni_netfilter::{
    priority, Action, Backend, BaseChain, Chain, ChainType, Family, Hook, Match, Protocol, Rule,
    Table, Transaction,
};
use common::{netns, with_nft, BoxError};

/// Brings `name` up with `addr`, and `lo` up.
fn configure(nl: &mut Netlink, name: &str, addr: &str) -> Result<(), BoxError> {
    let link = nl.link(name)?;
    nl.add_address(link.index, addr.parse()?, Dad::Skip)?;
    nl.set_up(link.index)?;
    let lo = nl.link("lo")?;
    nl.set_up(lo.index)?;
    Ok(())
}

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn a_connection_to_a_mapped_host_port_reaches_the_container() {
    let host = netns("nf-dnat-host");
    let container = netns("nf-dnat-ctr");
    host.add_veth("vh", "eth0", Some(&container)).unwrap();
    container
        .run(|nl| configure(nl, "eth0", "10.99.0.2/24"))
        .unwrap();
    let link = host
        .run(|nl| {
            configure(nl, "vh", "10.99.0.1/24")?;
            let index = nl.link("vh")?.index;
            Ok::<_, BoxError>(nl.wait_until_up(index, Duration::from_secs(10))?)
        })
        .unwrap();
    assert!(link.oper_up);

    // Bound before anyone connects: the listener is ready when this returns.
    let listener = container
        .run(|_| Ok::<_, BoxError>(TcpListener::bind("10.99.0.2:80")?))
        .unwrap();
    let server = std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept().unwrap();
        stream.write_all(b"hello from the container").unwrap();
        peer
    });

    let mut tx = Transaction::new(Table::new(Family::Ip, "cni_hostport"));
    tx.ensure_table()
        .ensure_chain(Chain::new("hostports"))
        .ensure_chain(Chain::base(
            "output",
            BaseChain::new(ChainType::Nat, Hook::Output, priority::DSTNAT),
        ))
        .add_rule(
            Rule::new("output")
                .matching(Match::LocalDestination)
                .then(Action::Jump("hostports".into())),
        )
        .add_rule(
            Rule::new("hostports")
                .matching(Match::Protocol(Protocol::Tcp))
                .matching(Match::DestinationPort(8080))
                .then(Action::Dnat {
                    addr: "10.99.0.2".parse().unwrap(),
                    port: Some(80),
                })
                .comment("ctr"),
        );
    with_nft(&host, |nft| Ok(nft.apply(&tx)?));

    let reply = host
        .run(|_| {
            let to: SocketAddr = "10.99.0.1:8080".parse()?;
            let mut stream = TcpStream::connect_timeout(&to, Duration::from_secs(10))?;
            stream.set_read_timeout(Some(Duration::from_secs(10)))?;
            let mut reply = String::new();
            stream.read_to_string(&mut reply)?;
            Ok::<_, BoxError>(reply)
        })
        .unwrap();
    assert_eq!(reply, "hello from the container");
    let peer = server.join().unwrap();
    assert_eq!(peer.ip().to_string(), "10.99.0.1");
}
