//! `dummy`: see `plugins_sample::dummy`.
#![no_main]

cni_skel::plugin_main!(
    plugins_sample::dummy::Dummy,
    cni_version::PluginInfo::all(),
    plugins_sample::dummy::ABOUT
);
