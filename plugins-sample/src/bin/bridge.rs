//! `bridge`: see `plugins_sample::bridge`. It carries `host-local` built in
//! (`cni_ipam::host_local::BUILTINS`).
#![no_main]

cni_skel::plugin_main!(|| {
    cni_invoke::set_builtins(&cni_ipam::host_local::BUILTINS);
    cni_skel::try_run(
        &plugins_sample::bridge::Bridge,
        &cni_version::PluginInfo::all(),
        plugins_sample::bridge::ABOUT,
    )
});
