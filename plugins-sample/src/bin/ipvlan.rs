//! `ipvlan`: see `plugins_sample::ipvlan`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::ipvlan::Ipvlan,
    cni_version::PluginInfo::all(),
    plugins_sample::ipvlan::ABOUT
);
