//! `host-local`: a drop-in for the reference `host-local` IPAM plugin,
//! [`cni_ipam::Ipam`] over the file store (the same engine and data
//! directory as `ipam-file`), so network lists naming `host-local` run
//! unchanged. Where it differs from the reference is in `cni_ipam`'s
//! crate documentation. Its mark lets the plugins that carry it built in
//! (`cni_ipam::host_local::BUILTINS`) run it in-process
//! (`cni_invoke::Builtin`).
#![no_main]

cni_invoke::mark_builtin!(cni_ipam::host_local::MARK);

cni_skel::plugin_main!(
    cni_ipam::host_local::plugin(),
    cni_version::PluginInfo::all(),
    cni_ipam::host_local::ABOUT
);
