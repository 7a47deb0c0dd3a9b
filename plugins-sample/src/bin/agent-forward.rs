//! `agent-forward`: the async sample plugin; see `plugins_sample::agent`.
#![no_main]

cni_skel::plugin_main!(
    cni_skel::Blocking::new(plugins_sample::agent::AgentForward),
    plugins_sample::agent::versions(),
    plugins_sample::agent::ABOUT
);
