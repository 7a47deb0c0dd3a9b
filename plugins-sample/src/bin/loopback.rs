//! `loopback`: see `plugins_sample::loopback`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::loopback::Loopback,
    cni_version::PluginInfo::all(),
    plugins_sample::loopback::ABOUT
);
