//! The MAC address a runtime or a user asks for the interface, from every
//! place one can be put, in the reference plugins' orders of precedence.

use super::RuntimeConfig;
use crate::Error;

/// Where a requested MAC address came from; see [`requested_mac`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacSource {
    /// `CNI_ARGS` `MAC=...`: how Podman passes `--mac-address`.
    CniArgs,
    /// `args.cni.mac` in the configuration.
    ArgsCni,
    /// `runtimeConfig.mac`: the `mac` capability (CONVENTIONS.md).
    RuntimeConfig,
    /// The plugin's own `mac` key (tuning has one).
    Config,
}

impl std::fmt::Display for MacSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MacSource::CniArgs => "CNI_ARGS MAC",
            MacSource::ArgsCni => "args.cni.mac",
            MacSource::RuntimeConfig => "runtimeConfig.mac",
            MacSource::Config => "mac",
        })
    }
}

/// Which reference plugin's precedence [`requested_mac`] follows: the
/// reference plugins disagree on `args.cni.mac` against
/// `runtimeConfig.mac`, and a drop-in replacement must pick the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacPrecedence {
    /// Interface plugins (reference `bridge`, `loadNetConf`):
    /// `runtimeConfig.mac`, then `args.cni.mac`, then `CNI_ARGS` `MAC`,
    /// then the plugin's own `mac`.
    Interface,
    /// The reference `tuning` (`parseConf`): `args.cni.mac`, then
    /// `runtimeConfig.mac`, then `CNI_ARGS` `MAC`, then the plugin's own
    /// `mac`.
    Tuning,
}

impl MacPrecedence {
    /// The sources, the one that wins first.
    pub fn order(self) -> [MacSource; 4] {
        use MacSource::*;
        match self {
            MacPrecedence::Interface => [RuntimeConfig, ArgsCni, CniArgs, Config],
            MacPrecedence::Tuning => [ArgsCni, RuntimeConfig, CniArgs, Config],
        }
    }
}

/// The MAC address asked for the interface, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestedMac {
    /// The address.
    pub mac: crate::Mac,
    /// The source that won.
    pub source: MacSource,
}

/// The MAC address requested for `CNI_IFNAME`, from every place a runtime
/// or a user can put one, in the reference plugins' order of precedence;
/// `None` when none asks for one. An empty value counts as absent, as in
/// the reference.
///
/// `cni_args` is `CNI_ARGS` as given (malformed: code 4); `own` is the
/// plugin's own `mac` key, if it has one.
///
/// ```
/// use cni_types::conventions::{requested_mac, MacPrecedence, MacSource};
/// use cni_types::NetConf;
///
/// let conf: NetConf = NetConf::from_json(br#"{"cniVersion": "1.0.0", "name": "n",
///     "runtimeConfig": {"mac": "02:00:00:00:00:02"}}"#).unwrap();
/// let podman = "IgnoreUnknown=1;K8S_POD_NAME=web;MAC=02:00:00:00:00:01";
/// let got = requested_mac(&conf, podman, None, MacPrecedence::Interface).unwrap().unwrap();
/// assert_eq!((got.mac.to_string().as_str(), got.source),
///            ("02:00:00:00:00:02", MacSource::RuntimeConfig));
/// ```
///
/// Go: the `MacEnvArgs` handling in the reference `bridge` (`loadNetConf`)
/// and `tuning` (`parseConf`). Where we deliberately differ: every value
/// given is checked, not only the winner, so a typo fails now rather than
/// the day precedence changes (code 7 naming the source and the value, also
/// for a group address, which no interface can take); and other `CNI_ARGS`
/// keys are left to the plugins they are for, where the reference fails
/// on them unless `IgnoreUnknown=1`.
pub fn requested_mac<T>(
    conf: &crate::NetConf<T>,
    cni_args: &str,
    own: Option<&str>,
    precedence: MacPrecedence,
) -> Result<Option<RequestedMac>, Error> {
    let env = crate::CniArgs::parse(cni_args)?;
    let text = |source| -> Result<Option<String>, Error> {
        let given = match source {
            MacSource::CniArgs => env.get("MAC").map(str::to_owned),
            MacSource::ArgsCni => conf
                .args
                .as_ref()
                .map(|a| a.cni_key("mac"))
                .transpose()?
                .flatten(),
            MacSource::RuntimeConfig => conf
                .runtime_config
                .as_ref()
                .map(RuntimeConfig::mac)
                .transpose()?
                .flatten(),
            MacSource::Config => own.map(str::to_owned),
        };
        Ok(given.filter(|t| !t.is_empty()))
    };
    let mut winner = None;
    for source in precedence.order() {
        let Some(text) = text(source)? else { continue };
        let mac = text
            .parse::<crate::Mac>()
            .ok()
            .filter(|m| m.is_unicast())
            .ok_or_else(|| {
                Error::invalid_config(
                    &format!("MAC address in {source}"),
                    format!("{text:?}: not a unicast MAC address"),
                )
            })?;
        winner.get_or_insert(RequestedMac { mac, source });
    }
    Ok(winner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    fn conf(json: serde_json::Value) -> crate::NetConf {
        crate::NetConf::from_value(json).unwrap()
    }

    #[test]
    fn each_reference_plugin_order_of_mac_precedence_is_kept() {
        let all = conf(serde_json::json!({
            "cniVersion": "1.0.0", "name": "n",
            "args": {"cni": {"mac": "02:00:00:00:00:02"}},
            "runtimeConfig": {"mac": "02:00:00:00:00:03"}
        }));
        let env = "IgnoreUnknown=1;MAC=02:00:00:00:00:01";
        let own = Some("02:00:00:00:00:04");
        let won = |conf: &crate::NetConf, env, own, p| {
            let got: RequestedMac = requested_mac(conf, env, own, p).unwrap().unwrap();
            (got.mac.to_string(), got.source)
        };
        let mac = |n: u8| format!("02:00:00:00:00:0{n}");
        use MacPrecedence::*;
        assert_eq!(
            won(&all, env, own, Interface),
            (mac(3), MacSource::RuntimeConfig)
        );
        assert_eq!(won(&all, env, own, Tuning), (mac(2), MacSource::ArgsCni));
        let plain = conf(serde_json::json!({"cniVersion": "1.0.0", "name": "n"}));
        assert_eq!(won(&plain, env, own, Tuning), (mac(1), MacSource::CniArgs));
        assert_eq!(
            won(&plain, "MAC=", own, Interface),
            (mac(4), MacSource::Config)
        );
        assert_eq!(requested_mac(&plain, "", None, Tuning).unwrap(), None);
    }

    #[test]
    fn an_invalid_mac_anywhere_is_code_7_naming_source_and_value() {
        let c = conf(serde_json::json!({
            "cniVersion": "1.0.0", "name": "n", "runtimeConfig": {"mac": "02:00:00:00:00:03"}
        }));
        let err =
            requested_mac(&c, "MAC=02:00:00:zz:00:01", None, MacPrecedence::Interface).unwrap_err();
        assert_eq!(err.code, Code::INVALID_NETWORK_CONFIG);
        assert_eq!(err.msg, "invalid MAC address in CNI_ARGS MAC");
        assert!(err.details.contains("02:00:00:zz:00:01"), "{err:?}");
        let err =
            requested_mac(&c, "", Some("01:00:5e:00:00:01"), MacPrecedence::Tuning).unwrap_err();
        assert_eq!(err.msg, "invalid MAC address in mac");
        let err = requested_mac(&c, "MAC", None, MacPrecedence::Tuning).unwrap_err();
        assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES);
    }
}
