//! `ipam-file`: the host-local-compatible IPAM plugin, [`cni_ipam::Ipam`]
//! over the file store (configuration and data directory alike, so an
//! operator can swap one for the other on a live node).
#![no_main]

cni_skel::plugin_main!(
    cni_ipam::Ipam::<cni_ipam::store::file::FileStore>::new("ipam-file"),
    cni_version::PluginInfo::all(),
    "CNI ipam-file plugin v0.1.0 (host-local compatible)"
);
