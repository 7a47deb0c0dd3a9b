//! `sbr`: see `plugins_sample::sbr`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::sbr::Sbr,
    cni_version::PluginInfo::all(),
    plugins_sample::sbr::ABOUT
);
