//! `bandwidth`: see `plugins_sample::bandwidth`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::bandwidth::Bandwidth,
    cni_version::PluginInfo::from_version(cni_version::SpecVersion::V0_3_0),
    plugins_sample::bandwidth::ABOUT
);
