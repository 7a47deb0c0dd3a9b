//! `vlan`: see `plugins_sample::vlan`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::vlan::Vlan,
    cni_version::PluginInfo::all(),
    plugins_sample::vlan::ABOUT
);
