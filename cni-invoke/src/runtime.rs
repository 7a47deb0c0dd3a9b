//! The runtime side (spec section 3): running a network configuration list
//! for one attachment.

use std::path::PathBuf;
use std::time::Duration;

use cni_skel::{Command, TraceContext};
use cni_types::validate::{validate_container_id, validate_interface_name};
use cni_types::{Attachment, CniResult, Code, Error, Extra};
use cni_version::{LooseVersion, PluginInfo};
use serde_json::{Map, Value};

use crate::cache::{self, CachedAttachment};
use crate::version::probe;
use crate::{
    exec_with_result, exec_without_result, find_in_path, Deadline, Invocation, NetworkList,
};

/// The attachment parameters a runtime passes for one container interface.
///
/// Go: `libcni.RuntimeConf`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeConf {
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_NETNS`.
    pub netns: String,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// `CNI_ARGS` pairs.
    pub args: Vec<(String, String)>,
    /// Capability arguments: each becomes part of `runtimeConfig` for the
    /// plugins whose `capabilities` name it.
    pub capability_args: Map<String, Value>,
}

/// A runtime: where plugins are and where results are cached.
///
/// Go: `libcni.CNIConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// Plugin directories (`CNI_PATH`).
    pub path: Vec<PathBuf>,
    /// Cache directory (libcni's default is `/var/lib/cni`).
    pub cache_dir: PathBuf,
    /// How long one operation (ADD, CHECK, DEL, GC, STATUS of the whole
    /// list) may take; a plugin still running when it passes is stopped
    /// and the operation fails (see [`exec_plugin`](crate::exec_plugin)).
    /// `None`, the default, waits as long as the plugins run.
    ///
    /// Go: the deadline of the `context.Context` given to libcni's
    /// `AddNetworkList` and friends.
    pub timeout: Option<Duration>,
    /// The caller's trace context, passed to every plugin this runtime
    /// executes (`TRACEPARENT`, `TRACESTATE`, `BAGGAGE`); empty by
    /// default. Set it per operation with [`Runtime::with_trace`].
    ///
    /// Go: the span and baggage of the `context.Context` given to libcni.
    pub trace: TraceContext,
}

impl Runtime {
    /// A runtime looking for plugins in `path` and caching in `cache_dir`.
    ///
    /// Go: `libcni.NewCNIConfig`.
    pub fn new(path: Vec<PathBuf>, cache_dir: impl Into<PathBuf>) -> Runtime {
        Runtime {
            path,
            cache_dir: cache_dir.into(),
            timeout: None,
            trace: TraceContext::default(),
        }
    }

    /// The same runtime with a [`timeout`](Runtime::timeout) for each
    /// operation.
    ///
    /// ```
    /// use std::time::Duration;
    /// let runtime = cni_invoke::Runtime::new(vec!["/opt/cni/bin".into()], "/var/lib/cni")
    ///     .with_timeout(Duration::from_secs(60));
    /// assert_eq!(runtime.timeout, Some(Duration::from_secs(60)));
    /// ```
    pub fn with_timeout(self, timeout: Duration) -> Runtime {
        Runtime {
            timeout: Some(timeout),
            ..self
        }
    }

    /// The same runtime passing `trace` to its plugins: the span of the
    /// caller's operation, so the plugins' work joins the caller's trace.
    ///
    /// ```
    /// use cni_skel::{TraceContext, TraceParent};
    /// let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    /// let runtime = cni_invoke::Runtime::new(vec!["/opt/cni/bin".into()], "/var/lib/cni")
    ///     .with_trace(TraceContext::with_parent(parent));
    /// assert!(!runtime.trace.is_empty());
    /// ```
    pub fn with_trace(self, trace: TraceContext) -> Runtime {
        Runtime { trace, ..self }
    }

    /// The deadline of an operation starting now.
    fn deadline(&self) -> Option<Deadline> {
        self.timeout.map(Deadline::after)
    }

    fn invocation(
        &self,
        command: Command,
        rt: &RuntimeConf,
        deadline: Option<Deadline>,
    ) -> Invocation {
        Invocation {
            command,
            container_id: rt.container_id.clone(),
            netns: rt.netns.clone(),
            ifname: rt.ifname.clone(),
            args: rt.args.clone(),
            path: self.path.clone(),
            deadline,
            trace: self.trace.clone(),
        }
    }

    /// Adds the attachment: every plugin in order, each given the previous
    /// one's result; the final result is cached and returned.
    ///
    /// Go: `CNIConfig.AddNetworkList`.
    pub fn add(&self, net: &NetworkList, rt: &RuntimeConf) -> Result<CniResult, Error> {
        validate_container_id(rt.container_id.as_bytes())?;
        validate_interface_name(rt.ifname.as_bytes())?;
        let deadline = self.deadline();
        let mut result: Option<CniResult> = None;
        for plugin in &net.list.plugins {
            let (path, config) = self.prepare(net, plugin, result.as_ref(), Some(rt), &[])?;
            let added = exec_with_result(
                &path,
                &self.invocation(Command::Add, rt, deadline.clone()),
                &config,
                net.version(),
            )
            .map_err(|e| in_plugin(e, plugin, "add"))?;
            result = Some(added);
        }
        let result =
            result.ok_or_else(|| Error::new(Code::INVALID_NETWORK_CONFIG, "no plugins in list"))?;
        cache::store(&self.cache_dir, &net.list.name, &net.bytes, rt, &result)?;
        Ok(result)
    }

    /// Checks the attachment: every plugin in order, each given the cached
    /// ADD result. Needs a list of version 0.4.0 or later; does nothing when
    /// the list sets `disableCheck`.
    ///
    /// Go: `CNIConfig.CheckNetworkList`.
    pub fn check(&self, net: &NetworkList, rt: &RuntimeConf) -> Result<(), Error> {
        if !at_least(net.version(), "0.4.0")? {
            return Err(Error::new(
                Code::INCOMPATIBLE_CNI_VERSION,
                format!(
                    "configuration version {:?} does not support the CHECK command",
                    net.version()
                ),
            ));
        }
        if net.list.disable_check {
            return Ok(());
        }
        let deadline = self.deadline();
        let cached = self.cached_result(net, rt)?;
        for plugin in &net.list.plugins {
            let (path, config) = self.prepare(net, plugin, cached.as_ref(), Some(rt), &[])?;
            exec_without_result(
                &path,
                &self.invocation(Command::Check, rt, deadline.clone()),
                &config,
            )
            .map_err(|e| in_plugin(e, plugin, "check"))?;
        }
        Ok(())
    }

    /// Deletes the attachment: every plugin in reverse order, each given the
    /// cached ADD result (from 0.4.0 on, as libcni), then drops the cache
    /// entry.
    ///
    /// Go: `CNIConfig.DelNetworkList`.
    pub fn del(&self, net: &NetworkList, rt: &RuntimeConf) -> Result<(), Error> {
        self.del_within(net, rt, self.deadline())
    }

    fn del_within(
        &self,
        net: &NetworkList,
        rt: &RuntimeConf,
        deadline: Option<Deadline>,
    ) -> Result<(), Error> {
        let cached = if at_least(net.version(), "0.4.0")? {
            self.cached_result(net, rt).unwrap_or_else(|_| {
                cache::remove(&self.cache_dir, &net.list.name, rt);
                None
            })
        } else {
            None
        };
        for plugin in net.list.plugins.iter().rev() {
            let (path, config) = self.prepare(net, plugin, cached.as_ref(), Some(rt), &[])?;
            exec_without_result(
                &path,
                &self.invocation(Command::Del, rt, deadline.clone()),
                &config,
            )
            .map_err(|e| in_plugin(e, plugin, "delete"))?;
        }
        cache::remove(&self.cache_dir, &net.list.name, rt);
        Ok(())
    }

    /// Garbage collection (1.1.0): deletes every cached attachment of this
    /// network that is not in `valid`, then sends GC with
    /// `cni.dev/valid-attachments` to every plugin. Carries on past errors
    /// and reports them all. Does nothing when the list sets `disableGC`.
    ///
    /// Go: `CNIConfig.GCNetworkList`.
    pub fn gc(&self, net: &NetworkList, valid: &[Attachment]) -> Result<(), Vec<Error>> {
        if net.list.disable_gc {
            return Ok(());
        }
        let deadline = self.deadline();
        let mut errors = Vec::new();
        for stale in cache::attachments(&self.cache_dir, &net.list.name) {
            let key = Attachment {
                container_id: stale.container_id.clone(),
                ifname: stale.ifname.clone(),
            };
            if valid.contains(&key) {
                continue;
            }
            if let Err(e) = self.del_within(net, &runtime_conf_of(stale), deadline.clone()) {
                errors.push(e.with_details(format!(
                    "deleting stale attachment {} {}",
                    key.container_id, key.ifname
                )));
            }
        }
        if at_least(net.version(), "1.1.0").unwrap_or(false) {
            let valid = serde_json::to_value(valid).unwrap_or(Value::Null);
            for plugin in &net.list.plugins {
                // Both names: the spec's, and the older one libcni also sends.
                let also = [
                    ("cni.dev/valid-attachments", &valid),
                    ("cni.dev/attachments", &valid),
                ];
                let result =
                    self.prepare(net, plugin, None, None, &also)
                        .and_then(|(path, config)| {
                            exec_without_result(
                                &path,
                                &self.invocation(
                                    Command::Gc,
                                    &RuntimeConf::default(),
                                    deadline.clone(),
                                ),
                                &config,
                            )
                        });
                if let Err(e) = result {
                    errors.push(in_plugin(e, plugin, "gc"));
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Asks every plugin whether it is ready (1.1.0); the first error is
    /// the answer. Lists below 1.1.0 are always ready.
    ///
    /// Go: `CNIConfig.GetStatusNetworkList`.
    pub fn status(&self, net: &NetworkList) -> Result<(), Error> {
        if !at_least(net.version(), "1.1.0").unwrap_or(false) {
            return Ok(());
        }
        let deadline = self.deadline();
        for plugin in &net.list.plugins {
            let (path, config) = self.prepare(net, plugin, None, None, &[])?;
            exec_without_result(
                &path,
                &self.invocation(Command::Status, &RuntimeConf::default(), deadline.clone()),
                &config,
            )
            .map_err(|e| in_plugin(e, plugin, "status"))?;
        }
        Ok(())
    }

    /// The cached ADD result of this attachment in the list's version.
    ///
    /// Go: `CNIConfig.GetNetworkListCachedResult`.
    pub fn cached_result(
        &self,
        net: &NetworkList,
        rt: &RuntimeConf,
    ) -> Result<Option<CniResult>, Error> {
        cache::load(&self.cache_dir, &net.list.name, rt, net.version())
    }

    /// The versions a plugin supports (its `VERSION` answer).
    ///
    /// Go: `CNIConfig.GetVersionInfo`.
    pub fn version_info(&self, plugin_type: &str) -> Result<PluginInfo, Error> {
        let plugin = find_in_path(plugin_type, &self.path)?;
        probe(&plugin, self.deadline(), self.trace.clone())
    }

    /// The plugin's binary and its execution configuration: the plugin's
    /// entry with `name` and `cniVersion` inserted, `prevResult` when given,
    /// `runtimeConfig` from the capabilities it declares and the runtime
    /// provides, `capabilities` removed (spec section 3), and any `also`
    /// keys the command needs (GC's valid attachments).
    fn prepare(
        &self,
        net: &NetworkList,
        plugin: &Extra,
        prev: Option<&CniResult>,
        rt: Option<&RuntimeConf>,
        also: &[(&str, &Value)],
    ) -> Result<(PathBuf, Vec<u8>), Error> {
        let plugin_type = plugin
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let path = find_in_path(plugin_type, &self.path)?;
        let mut config = plugin.clone();
        config.insert("name".into(), net.list.name.clone().into());
        config.insert("cniVersion".into(), net.version().into());
        if let Some(prev) = prev {
            config.insert(
                "prevResult".into(),
                serde_json::to_value(prev).unwrap_or(Value::Null),
            );
        }
        let capabilities = config.remove("capabilities");
        if let (Some(Value::Object(caps)), Some(rt)) = (capabilities, rt) {
            let runtime_config: Map<String, Value> = caps
                .iter()
                .filter(|(_, on)| on.as_bool() == Some(true))
                .filter_map(|(cap, _)| {
                    rt.capability_args
                        .get(cap)
                        .map(|v| (cap.clone(), v.clone()))
                })
                .collect();
            if !runtime_config.is_empty() {
                config.insert("runtimeConfig".into(), Value::Object(runtime_config));
            }
        }
        for (key, value) in also {
            config.insert((*key).to_owned(), (*value).clone());
        }
        Ok((path, serde_json::to_vec(&config).unwrap_or_default()))
    }
}

fn runtime_conf_of(a: CachedAttachment) -> RuntimeConf {
    RuntimeConf {
        container_id: a.container_id,
        netns: a.netns,
        ifname: a.ifname,
        args: a.cni_args,
        capability_args: a.capability_args,
    }
}

fn at_least(version: &str, minimum: &str) -> Result<bool, Error> {
    LooseVersion::greater_or_equal(version, minimum)
        .map_err(|e| Error::decoding(&format!("the list's cniVersion {version:?}"), e))
}

/// Says which plugin failed, keeping the plugin's code and message.
fn in_plugin(mut err: Error, plugin: &Extra, op: &str) -> Error {
    let plugin_type = plugin
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let context = format!("plugin type={plugin_type:?} failed ({op})");
    err.details = if err.details.is_empty() {
        context
    } else {
        format!("{context}: {}", err.details)
    };
    err
}
