//! `vrf`: see `plugins_sample::vrf`. Like the reference, it supports
//! configurations from 0.3.1 on.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::vrf::Vrf,
    cni_version::PluginInfo::from_version(cni_version::SpecVersion::V0_3_1),
    plugins_sample::vrf::ABOUT
);
