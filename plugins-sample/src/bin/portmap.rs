//! `portmap`: see `plugins_sample::portmap`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::portmap::Portmap,
    cni_version::PluginInfo::all(),
    plugins_sample::portmap::ABOUT
);
