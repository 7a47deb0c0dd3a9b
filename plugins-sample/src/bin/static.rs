//! `static`: see `plugins_sample::static_ipam`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::static_ipam::Static,
    cni_version::PluginInfo::all(),
    plugins_sample::static_ipam::ABOUT
);
