//! `ipam-file`: the host-local-compatible IPAM plugin; see
//! `plugins_sample::ipam`.

fn main() {
    cni_skel::run(
        &plugins_sample::ipam::IpamFile,
        &cni_version::PluginInfo::all(),
        plugins_sample::ipam::ABOUT,
    );
}
