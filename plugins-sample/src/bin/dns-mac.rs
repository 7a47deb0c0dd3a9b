//! `dns-mac`: the chained sample plugin; see `plugins_sample::dns_mac`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::dns_mac::DnsMac,
    cni_version::PluginInfo::all(),
    plugins_sample::dns_mac::ABOUT
);
