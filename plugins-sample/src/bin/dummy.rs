//! `dummy`: see `plugins_sample::dummy`. It carries `host-local` built in
//! (`cni_ipam::host_local::BUILTINS`).
#![no_main]

cni_skel::plugin_main!(|| {
    cni_invoke::set_builtins(&cni_ipam::host_local::BUILTINS);
    cni_skel::try_run(
        &plugins_sample::dummy::Dummy,
        &cni_version::PluginInfo::all(),
        plugins_sample::dummy::ABOUT,
    )
});
