//! `tap`: see `plugins_sample::tap`. It carries `host-local` built in
//! (`plugins_sample::CARRIED_IPAM`).
#![no_main]

cni_skel::plugin_main!(|| {
    cni_invoke::set_builtins(&plugins_sample::CARRIED_IPAM);
    cni_skel::try_run(
        &plugins_sample::tap::Tap,
        &cni_version::PluginInfo::all(),
        plugins_sample::tap::ABOUT,
    )
});
