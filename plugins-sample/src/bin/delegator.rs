//! `delegator`: the IPAM-delegating sample; see `plugins_sample::delegator`.

fn main() {
    cni_skel::run(
        &plugins_sample::delegator::Delegator,
        &cni_version::PluginInfo::all(),
        plugins_sample::delegator::ABOUT,
    );
}
