//! `veth`: the interface sample; see `plugins_sample::veth`. It carries
//! `host-local` built in (`cni_ipam::host_local::BUILTINS`).
#![no_main]

cni_skel::plugin_main!(|| {
    cni_invoke::set_builtins(&cni_ipam::host_local::BUILTINS);
    cni_skel::try_run(
        &plugins_sample::veth::Veth,
        &cni_version::PluginInfo::all(),
        plugins_sample::veth::ABOUT,
    )
});
