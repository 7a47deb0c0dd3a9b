//! The behaviours every store must have, each a function generic over a
//! [`Backend`]; `main.rs`'s `store_suite!` makes them tests per backend.
//!
//! The planner decides ([`plan::plan`]), the store only reads and writes:
//! these drive the `Store` trait as `cni_ipam::Ipam` does, and check what a
//! second reader then sees.

use std::collections::BTreeSet;
use std::net::IpAddr;

use cni_ipam::config::IpamConfig;
use cni_ipam::gc;
use cni_ipam::plan;
use cni_ipam::store::{Access, Assigned, Owner, Reservation, Reserved, Store};
use cni_types::{Attachment, NetConf, ValidAttachments};
use serde_json::{json, Value};

/// The network every test uses; each backend is a fresh store.
pub const NETWORK: &str = "net";

/// A fresh, empty store of one kind, and what a test needs to put in it
/// that a plugin would never write.
pub trait Backend: Sized {
    /// The store under test.
    type Store: Store;

    /// A fresh, empty store.
    fn start() -> Self;

    /// The `ipam` section's keys that select this store (`type`, `dataDir`
    /// or `store`).
    fn ipam(&self) -> Value;

    /// Writes a reservation of `container_id` without an interface, as an
    /// older host-local wrote it.
    fn plant_legacy(&self, ip: IpAddr, container_id: &str);

    /// Writes an entry named like `ip` that is no reservation.
    fn plant_stray(&self, ip: IpAddr);

    /// The store's own bookkeeping (lock, last reserved addresses), as
    /// comparable text: it must survive every release untouched.
    fn bookkeeping(&self) -> Vec<String>;
}

/// `text` as an address.
pub fn ip(text: &str) -> IpAddr {
    text.parse().expect("an address")
}

/// A new address for range set `set`.
pub fn assigned(set: usize, address: &str) -> Assigned {
    let ip = ip(address);
    Assigned {
        set,
        ip,
        prefix: if ip.is_ipv4() { 24 } else { 64 },
        gateway: ip,
        new: true,
    }
}

/// A network's configuration: the validated `ipam` section, and the keys
/// its store reads.
pub struct Config {
    /// The section, validated.
    pub ipam: IpamConfig,
    /// The section as written, for the store's keys.
    section: Value,
}

impl Config {
    /// The store, opened for `access` and told the ranges, as the plugin
    /// does; panics unless it exists.
    pub fn open<S: Store>(&self, access: Access) -> S {
        let section = self.section.as_object().expect("an ipam object");
        let store = S::config(section).expect("a valid store section");
        let mut store = S::open(&self.ipam.name, &store, access)
            .expect("open")
            .expect("a store that was written");
        store.use_ranges(&self.ipam.range_sets).expect("ranges");
        store
    }

    /// How many range sets.
    pub fn sets(&self) -> usize {
        self.ipam.range_sets.len()
    }
}

/// The configuration of `ranges` on the store `ipam` selects.
pub fn config(ipam: &Value, ranges: Value) -> Config {
    let conf = conf(ipam, ranges, None);
    Config {
        ipam: IpamConfig::from_conf(&conf).expect("a valid ipam section"),
        section: serde_json::to_value(&conf.ipam).expect("JSON"),
    }
}

/// The network configuration, with `cni.dev/valid-attachments` when
/// `valid` is given.
fn conf(ipam: &Value, ranges: Value, valid: Option<Value>) -> NetConf {
    let mut ipam = ipam.clone();
    ipam["ranges"] = ranges;
    let mut c = json!({"cniVersion": "1.1.0", "name": NETWORK, "type": "bridge", "ipam": ipam});
    if let Some(valid) = valid {
        c["cni.dev/valid-attachments"] = valid;
    }
    NetConf::from_value(c).expect("a configuration")
}

/// One /24.
fn v4<B: Backend>(b: &B) -> Config {
    config(&b.ipam(), json!([[{"subnet": "10.60.0.0/24"}]]))
}

fn open<B: Backend>(cfg: &Config, access: Access) -> B::Store {
    cfg.open::<B::Store>(access)
}

/// Reserves `addresses` for `(id, ifname)`; panics unless done.
fn reserve<B: Backend>(cfg: &Config, id: &str, ifname: &str, addresses: &[Assigned]) {
    let done = open::<B>(cfg, Access::Create)
        .reserve(addresses, &attachment(id, ifname))
        .expect("reserve");
    assert_eq!(done, Reserved::Done, "{id}/{ifname}: {addresses:?}");
}

/// What a fresh reader sees: address -> owner.
fn held<B: Backend>(cfg: &Config) -> Vec<(IpAddr, Owner)> {
    let mut held: Vec<(IpAddr, Owner)> = open::<B>(cfg, Access::Read)
        .read(cfg.sets())
        .expect("read")
        .held
        .into_iter()
        .map(|r| (r.ip, r.owner))
        .collect();
    held.sort_by_key(|(ip, _)| *ip);
    held
}

/// The attachment `(id, ifname)`.
pub fn attachment(id: &str, ifname: &str) -> Attachment {
    Attachment {
        container_id: id.into(),
        ifname: ifname.into(),
    }
}

fn at(id: &str, ifname: &str) -> Owner {
    Owner::Attachment(attachment(id, ifname))
}

/// Releases what `which` picks from a fresh read, as DEL and GC do.
fn release_where<B: Backend>(cfg: &Config, which: impl Fn(&Reservation) -> bool) {
    let mut store = open::<B>(cfg, Access::Change);
    let state = store.read(cfg.sets()).expect("read");
    let gone: Vec<&Reservation> = state.held.iter().filter(|r| which(r)).collect();
    store.release(&gone).expect("release");
}

pub fn a_reservation_is_read_back_with_its_owner_and_as_last_reserved<B: Backend>() {
    let b = B::start();
    let cfg = config(
        &b.ipam(),
        json!([[{"subnet": "10.60.0.0/24"}], [{"subnet": "2001:db8:60::/64"}]]),
    );
    reserve::<B>(
        &cfg,
        " c1 ",
        "eth0",
        &[assigned(0, "10.60.0.7"), assigned(1, "2001:db8:60::7")],
    );
    // A second reader, as the next plugin run is.
    let mut store = open::<B>(&cfg, Access::Read);
    let state = store.read(2).expect("read");
    assert!(state.skipped.is_empty(), "{:?}", state.skipped);
    assert_eq!(
        state.last_reserved,
        [Some(ip("10.60.0.7")), Some(ip("2001:db8:60::7"))]
    );
    let c1 = attachment("c1", "eth0");
    let mut mine: Vec<IpAddr> = state
        .held
        .iter()
        .filter(|r| r.belongs_to(&c1))
        .map(|r| r.ip)
        .collect();
    mine.sort();
    assert_eq!(mine, [ip("10.60.0.7"), ip("2001:db8:60::7")]);
    let mut addresses = store.held_addresses().expect("addresses");
    addresses.sort();
    assert_eq!(addresses, mine);
}

pub fn a_reservation_is_all_or_nothing_when_one_address_is_taken<B: Backend>() {
    let b = B::start();
    let cfg = config(
        &b.ipam(),
        json!([[{"subnet": "10.60.0.0/24"}], [{"subnet": "2001:db8:60::/64"}]]),
    );
    reserve::<B>(&cfg, "c1", "eth0", &[assigned(1, "2001:db8:60::3")]);
    let taken = open::<B>(&cfg, Access::Create)
        .reserve(
            &[assigned(0, "10.60.0.3"), assigned(1, "2001:db8:60::3")],
            &attachment("c2", "eth0"),
        )
        .expect("reserve");
    assert_eq!(taken, Reserved::Taken(ip("2001:db8:60::3")));
    // Nothing of c2's is left, and c1 still holds its address.
    assert_eq!(held::<B>(&cfg), [(ip("2001:db8:60::3"), at("c1", "eth0"))]);
}

pub fn release_removes_exactly_the_attachment_given<B: Backend>() {
    let b = B::start();
    let cfg = v4(&b);
    reserve::<B>(&cfg, "c1", "eth0", &[assigned(0, "10.60.0.2")]);
    reserve::<B>(&cfg, "c1", "net1", &[assigned(0, "10.60.0.3")]);
    reserve::<B>(&cfg, "c2", "eth0", &[assigned(0, "10.60.0.4")]);
    let before = b.bookkeeping();
    release_where::<B>(&cfg, |r| r.held_by(&attachment("c1", "eth0")));
    assert_eq!(
        held::<B>(&cfg),
        [
            (ip("10.60.0.3"), at("c1", "net1")),
            (ip("10.60.0.4"), at("c2", "eth0"))
        ]
    );
    assert_eq!(b.bookkeeping(), before);
    // Releasing it again changes nothing and is no error.
    release_where::<B>(&cfg, |r| r.held_by(&attachment("c1", "eth0")));
    assert_eq!(held::<B>(&cfg).len(), 2);
}

pub fn an_older_single_line_reservation_is_released_by_container_id<B: Backend>() {
    let b = B::start();
    let cfg = v4(&b);
    reserve::<B>(&cfg, "c1", "eth0", &[assigned(0, "10.60.0.2")]);
    b.plant_legacy(ip("10.60.0.9"), "old");
    assert_eq!(
        held::<B>(&cfg),
        [
            (ip("10.60.0.2"), at("c1", "eth0")),
            (ip("10.60.0.9"), Owner::Container("old".into()))
        ]
    );
    // Whatever the interface, the container holds it (CHECK, a repeated ADD)...
    let state = open::<B>(&cfg, Access::Read).read(1).expect("read");
    let old = state
        .held
        .iter()
        .find(|r| r.ip == ip("10.60.0.9"))
        .expect("held");
    assert!(old.belongs_to(&attachment("old", "eth7")));
    assert!(!old.belongs_to(&attachment("c1", "eth0")));
    // ... and a DEL of any of its interfaces releases it.
    release_where::<B>(&cfg, |r| r.held_by_legacy("old"));
    assert_eq!(held::<B>(&cfg), [(ip("10.60.0.2"), at("c1", "eth0"))]);
}

pub fn the_next_search_starts_after_the_last_reserved_address<B: Backend>() {
    let b = B::start();
    let cfg = v4(&b);
    let next = |id: &str| {
        let mut store = open::<B>(&cfg, Access::Create);
        let state = store.read(1).expect("read");
        let a = attachment(id, "eth0");
        let plan = plan::plan(&cfg.ipam, &state, &a, &[]).expect("plan");
        assert_eq!(store.reserve(&plan, &a).expect("reserve"), Reserved::Done);
        plan[0].ip
    };
    assert_eq!(next("c1"), ip("10.60.0.2"));
    assert_eq!(next("c2"), ip("10.60.0.3"));
    release_where::<B>(&cfg, |r| r.held_by(&attachment("c1", "eth0")));
    // .2 is free again, but host-local's order goes on from .3.
    assert_eq!(next("c3"), ip("10.60.0.4"));
}

pub fn a_stray_entry_is_taken_named_and_never_released<B: Backend>() {
    let b = B::start();
    let cfg = v4(&b);
    b.plant_stray(ip("10.60.0.2"));
    let mut store = open::<B>(&cfg, Access::Create);
    let state = store.read(1).expect("read");
    assert!(
        state.skipped.iter().any(|s| s.entry.contains("10.60.0.2")),
        "not named: {:?}",
        state.skipped
    );
    let stray = state
        .held
        .iter()
        .find(|r| r.ip == ip("10.60.0.2"))
        .expect("taken");
    assert!(matches!(stray.owner, Owner::Unknown(_)), "{stray:?}");
    // The planner moves past it, as host-local does past a file it cannot create.
    let c1 = attachment("c1", "eth0");
    let plan = plan::plan(&cfg.ipam, &state, &c1, &[]).expect("plan");
    assert_eq!(plan[0].ip, ip("10.60.0.3"));
    assert_eq!(store.reserve(&plan, &c1).expect("reserve"), Reserved::Done);
    // Releasing it, even by mistake, leaves it.
    store.release(&[stray]).expect("release");
    drop(store);
    let mut addresses = open::<B>(&cfg, Access::Read)
        .held_addresses()
        .expect("read");
    addresses.sort();
    assert_eq!(addresses, [ip("10.60.0.2"), ip("10.60.0.3")]);
}

pub fn gc_releases_exactly_what_is_not_valid_in_each_of_its_three_states<B: Backend>() {
    let attachment = |id: &str, ifname: &str| json!({"containerID": id, "ifname": ifname});
    let all = ["10.60.0.2", "10.60.0.3", "10.60.0.4", "10.60.0.9"];
    for (valid, remain) in [
        (None, &all[..]),
        (Some(Value::Null), &[][..]),
        (Some(json!([])), &[][..]),
        (
            Some(json!([
                attachment("c1", "eth0"),
                attachment("c3", "eth0"),
                attachment("old", "eth7")
            ])),
            &["10.60.0.2", "10.60.0.9"][..],
        ),
    ] {
        let b = B::start();
        let ranges = json!([[{"subnet": "10.60.0.0/24"}]]);
        let cfg = config(&b.ipam(), ranges.clone());
        reserve::<B>(&cfg, "c1", "eth0", &[assigned(0, "10.60.0.2")]);
        reserve::<B>(&cfg, "c2", "eth0", &[assigned(0, "10.60.0.3")]);
        reserve::<B>(&cfg, "c3", "net1", &[assigned(0, "10.60.0.4")]);
        b.plant_legacy(ip("10.60.0.9"), "old");
        let before = b.bookkeeping();
        // The runtime's key as the plugin reads it: absent is "did not
        // say", null libcni's empty list.
        let conf = conf(&b.ipam(), ranges, valid.clone());
        let states: &ValidAttachments = &conf.valid_attachments;
        assert_eq!(states.is_unspecified(), valid.is_none());

        let mut store = open::<B>(&cfg, Access::Change);
        let state = store.read(1).expect("read");
        store
            .release(&gc::stale(&state.held, states))
            .expect("release");
        drop(store);

        let left: BTreeSet<IpAddr> = held::<B>(&cfg).into_iter().map(|(ip, _)| ip).collect();
        let want: BTreeSet<IpAddr> = remain.iter().map(|s| ip(s)).collect();
        assert_eq!(left, want, "GC with {valid:?}");
        assert_eq!(
            b.bookkeeping(),
            before,
            "bookkeeping after GC with {valid:?}"
        );
    }
}

pub fn concurrent_reservers_never_share_an_address<B: Backend>() {
    const THREADS: usize = 8;
    const EACH: usize = 8;
    let b = B::start();
    let cfg = config(&b.ipam(), json!([[{"subnet": "10.60.0.0/25"}]]));
    let got: Vec<IpAddr> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let cfg = &cfg;
                s.spawn(move || {
                    (0..EACH)
                        .map(|i| add::<B>(cfg, &format!("t{t}-{i}"), t))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    let distinct: BTreeSet<IpAddr> = got.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        THREADS * EACH,
        "an address handed out twice: {got:?}"
    );
    let stored: BTreeSet<IpAddr> = held::<B>(&cfg).into_iter().map(|(ip, _)| ip).collect();
    assert_eq!(stored, distinct);
}

/// An ADD as `cni_ipam::Ipam` does it: read, plan, reserve, and on a lost
/// race read again and plan a little further on.
fn add<B: Backend>(cfg: &Config, id: &str, worker: usize) -> IpAddr {
    let a = attachment(id, "eth0");
    let mut store = open::<B>(cfg, Access::Create);
    for lost in 0..1000 {
        let state = store.read(1).expect("read");
        let plan = plan::plan_skipping(&cfg.ipam, &state, &a, &[], lost * (worker + 1) % 32)
            .expect("plan");
        if store.reserve(&plan, &a).expect("reserve") == Reserved::Done {
            return plan[0].ip;
        }
    }
    panic!("{id} kept losing");
}
