//! `agent-forward`: the async sample plugin; see `plugins_sample::agent`.
#![no_main]

cni_skel::plugin_main!(
    cni_skel::Blocking::new(plugins_sample::agent::AgentForward),
    cni_version::PluginInfo::all(),
    plugins_sample::agent::ABOUT
);
