//! `tuning`: see `plugins_sample::tuning`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::tuning::Tuning,
    cni_version::PluginInfo::all(),
    plugins_sample::tuning::ABOUT
);
