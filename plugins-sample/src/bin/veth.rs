//! `veth`: the interface sample; see `plugins_sample::veth`.

fn main() {
    cni_skel::run(
        &plugins_sample::veth::Veth,
        &cni_version::PluginInfo::all(),
        plugins_sample::veth::ABOUT,
    );
}
