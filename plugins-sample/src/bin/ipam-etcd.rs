//! `ipam-etcd`: [`cni_ipam::Ipam`] over the etcd store, so every node of a
//! cluster allocates from the same ranges without handing an address out
//! twice. The `ipam` section is ipam-file's, with
//! `"store": {"type": "etcd", "endpoints": ["http://127.0.0.1:2379"]}`.
#![no_main]

cni_skel::plugin_main!(
    cni_ipam::Ipam::<cni_ipam::store::etcd::EtcdStore>::new("ipam-etcd"),
    cni_version::PluginInfo::all(),
    "CNI ipam-etcd plugin v0.1.0 (cluster-wide reservations in etcd)"
);
