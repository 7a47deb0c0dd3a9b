//! `host-device`: see `plugins_sample::host_device`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::host_device::HostDevice,
    cni_version::PluginInfo::all(),
    plugins_sample::host_device::ABOUT
);
