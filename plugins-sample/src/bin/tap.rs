//! `tap`: see `plugins_sample::tap`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::tap::Tap,
    cni_version::PluginInfo::all(),
    plugins_sample::tap::ABOUT
);
