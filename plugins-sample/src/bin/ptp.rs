//! `ptp`: see `plugins_sample::ptp`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::ptp::Ptp,
    cni_version::PluginInfo::all(),
    plugins_sample::ptp::ABOUT
);
