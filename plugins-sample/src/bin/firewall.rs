//! `firewall`: see `plugins_sample::firewall`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::firewall::Firewall,
    cni_version::PluginInfo::all(),
    plugins_sample::firewall::ABOUT
);
