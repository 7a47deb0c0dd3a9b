//! `macvlan`: see `plugins_sample::macvlan`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::macvlan::Macvlan,
    cni_version::PluginInfo::all(),
    plugins_sample::macvlan::ABOUT
);
