//! `ipam-file`: the host-local-compatible IPAM plugin; see
//! `plugins_sample::ipam`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::ipam::IpamFile,
    cni_version::PluginInfo::all(),
    plugins_sample::ipam::ABOUT
);
