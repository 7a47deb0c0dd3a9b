//! `dns-mac`: the chained sample plugin; see `plugins_sample::dns_mac`.

fn main() {
    cni_skel::run(
        &plugins_sample::dns_mac::DnsMac,
        &cni_version::PluginInfo::all(),
        plugins_sample::dns_mac::ABOUT,
    );
}
