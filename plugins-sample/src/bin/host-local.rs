//! `host-local`: a drop-in for the reference `host-local` IPAM plugin,
//! [`cni_ipam::Ipam`] over the file store (the same engine and data
//! directory as `ipam-file`), so network lists naming `host-local` run
//! unchanged. Where it differs from the reference is in `cni_ipam`'s
//! crate documentation.
#![no_main]

cni_skel::plugin_main!(
    cni_ipam::Ipam::<cni_ipam::store::file::FileStore>::new("host-local"),
    cni_version::PluginInfo::all(),
    "CNI host-local plugin v0.1.0 (cni-rs)"
);
