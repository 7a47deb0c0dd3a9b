//! `delegator`: the IPAM-delegating sample; see `plugins_sample::delegator`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::delegator::Delegator,
    cni_version::PluginInfo::all(),
    plugins_sample::delegator::ABOUT
);
