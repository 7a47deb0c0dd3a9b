//! The suite on the etcd store, and what only it has: nodes, and releases
//! that check what they delete.

use std::net::IpAddr;

use cni_ipam::store::etcd::EtcdStore;
use cni_ipam::store::{Access, Assigned, Owner, Reservation, Reserved, Store};
use serde_json::{json, Value};
use tests::etcd::Etcd;

use crate::suite::{assigned, attachment, config, ip, Backend, Config, NETWORK};

/// The node the suite's stores run as.
const NODE: &str = "node-a";

/// A real etcd of its own.
pub struct Cluster {
    etcd: Etcd,
}

impl Cluster {
    fn ipam_as(&self, node: &str) -> Value {
        json!({"type": "ipam-etcd",
               "store": {"type": "etcd", "endpoints": [self.etcd.endpoint()], "node": node}})
    }

    fn key(ip: IpAddr) -> String {
        format!("/cni-ipam/{NETWORK}/ips/{ip}")
    }
}

impl Backend for Cluster {
    type Store = EtcdStore;

    fn start() -> Cluster {
        Cluster {
            etcd: Etcd::start(),
        }
    }

    fn ipam(&self) -> Value {
        self.ipam_as(NODE)
    }

    fn plant_legacy(&self, ip: IpAddr, container_id: &str) {
        let value = json!({"containerID": container_id, "node": NODE});
        self.etcd.put(&Cluster::key(ip), &value.to_string());
    }

    fn plant_stray(&self, ip: IpAddr) {
        self.etcd.put(&Cluster::key(ip), "\u{1}not a reservation");
    }

    fn bookkeeping(&self) -> Vec<String> {
        self.etcd
            .get_prefix(&format!("/cni-ipam/{NETWORK}/last_reserved/"))
            .into_iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect()
    }
}

crate::store_suite!(Cluster);

fn open(cfg: &Config) -> EtcdStore {
    cfg.open::<EtcdStore>(Access::Change)
}

#[test]
fn another_nodes_reservations_are_taken_but_never_matched_or_released() {
    let cluster = Cluster::start();
    let a = config(
        &cluster.ipam_as("node-a"),
        json!([[{"subnet": "10.70.0.0/24"}]]),
    );
    let b = config(
        &cluster.ipam_as("node-b"),
        json!([[{"subnet": "10.70.0.0/24"}]]),
    );
    let c1 = attachment("c1", "eth0");
    assert_eq!(
        open(&b)
            .reserve(&[assigned(0, "10.70.0.2")], &c1)
            .expect("reserve"),
        Reserved::Done
    );
    // Node a's ADD claims the block holding the address node b took
    // outside any block of its own: a sees it there.
    let mut store = a.open::<EtcdStore>(Access::Create);
    let state = store.read(1).expect("read");
    let [held] = state.held.as_slice() else {
        panic!("{state:?}")
    };
    assert_eq!(held.ip, ip("10.70.0.2"));
    assert!(
        !held.local,
        "node-b's reservation read on node-a as its own"
    );
    assert!(!held.belongs_to(&c1), "node-a's c1 matched node-b's c1");
    // Node a's GC with an empty list, and a DEL of c1 on node a.
    let stale = cni_ipam::gc::stale(&state.held, &cni_types::ValidAttachments::List(vec![]));
    assert!(stale.is_empty(), "{stale:?}");
    store.release(&[held]).expect("release");
    assert_eq!(store.held_addresses().expect("read"), [ip("10.70.0.2")]);
    // Node a cannot reserve it either.
    let taken = store
        .reserve(&[assigned(0, "10.70.0.2")], &c1)
        .expect("reserve");
    assert_eq!(taken, Reserved::Taken(ip("10.70.0.2")));
}

#[test]
fn a_release_keeps_an_address_reserved_again_since_it_was_read() {
    let cluster = Cluster::start();
    let cfg = config(&cluster.ipam(), json!([[{"subnet": "10.71.0.0/24"}]]));
    let mut slow = open(&cfg);
    for (id, address) in [("c1", "10.71.0.2"), ("c3", "10.71.0.3")] {
        let done = slow
            .reserve(&[assigned(0, address)], &attachment(id, "eth0"))
            .expect("reserve");
        assert_eq!(done, Reserved::Done);
    }
    // A GC reads both reservations; meanwhile a DEL releases c1's and c2
    // gets its address.
    let read = slow.read(1).expect("read");
    let mut fast = open(&cfg);
    let held = fast.read(1).expect("read").held;
    let c1: Vec<&Reservation> = held
        .iter()
        .filter(|r| r.held_by(&attachment("c1", "eth0")))
        .collect();
    fast.release(&c1).expect("release");
    let c2 = attachment("c2", "eth0");
    assert_eq!(
        fast.reserve(&[assigned(0, "10.71.0.2")], &c2)
            .expect("reserve"),
        Reserved::Done
    );
    // The GC's release of what it read frees c3's address, never c2's.
    slow.release(&read.held.iter().collect::<Vec<_>>())
        .expect("release");
    let now = open(&cfg).read(1).expect("read").held;
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].ip, ip("10.71.0.2"));
    assert_eq!(now[0].owner, Owner::Attachment(attachment("c2", "eth0")));
}

#[test]
fn a_reservation_is_the_one_transaction_that_wins_among_nodes() {
    // Two nodes planned the same address from the same read: one wins,
    // the other is told it is taken and writes nothing.
    let cluster = Cluster::start();
    let range = json!([[{"subnet": "10.72.0.0/24"}], [{"subnet": "2001:db8:72::/64"}]]);
    let a = config(&cluster.ipam_as("node-a"), range.clone());
    let b = config(&cluster.ipam_as("node-b"), range);
    let both = |v4: &str, v6: &str| -> Vec<Assigned> { vec![assigned(0, v4), assigned(1, v6)] };
    let won = open(&a)
        .reserve(
            &both("10.72.0.2", "2001:db8:72::2"),
            &attachment("a1", "eth0"),
        )
        .expect("reserve");
    assert_eq!(won, Reserved::Done);
    let lost = open(&b)
        .reserve(
            &both("10.72.0.3", "2001:db8:72::2"),
            &attachment("b1", "eth0"),
        )
        .expect("reserve");
    assert!(matches!(lost, Reserved::Taken(_)), "{lost:?}");
    let mut held = open(&a).held_addresses().expect("read");
    held.sort();
    assert_eq!(held, [ip("10.72.0.2"), ip("2001:db8:72::2")]);
}
