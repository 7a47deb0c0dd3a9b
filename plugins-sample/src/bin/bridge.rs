//! `bridge`: see `plugins_sample::bridge`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::bridge::Bridge,
    cni_version::PluginInfo::all(),
    plugins_sample::bridge::ABOUT
);
