//! `ptp`: see `plugins_sample::ptp`. It carries `host-local` built in
//! and runs it in-process when the `host-local` on `CNI_PATH` is ours of
//! the same release (`cni_invoke::Builtin`): one process less per pod.
#![no_main]

static CARRIED: [cni_invoke::Builtin; 1] = [cni_invoke::Builtin {
    name: cni_ipam::host_local::NAME,
    mark: cni_ipam::host_local::MARK,
    main: cni_ipam::host_local::run,
}];

cni_skel::plugin_main!(|| {
    cni_invoke::set_builtins(&CARRIED);
    cni_skel::try_run(
        &plugins_sample::ptp::Ptp,
        &cni_version::PluginInfo::all(),
        plugins_sample::ptp::ABOUT,
    )
});
