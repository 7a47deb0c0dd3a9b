//! `veth`: the interface sample; see `plugins_sample::veth`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::veth::Veth,
    cni_version::PluginInfo::all(),
    plugins_sample::veth::ABOUT
);
