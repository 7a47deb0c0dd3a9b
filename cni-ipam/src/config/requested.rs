//! The addresses a runtime asks for: `args.cni.ips`, `runtimeConfig.ips`,
//! `CNI_ARGS` `IP`.

use std::net::IpAddr;

use cni_types::{Error, IpNetwork, NetConf};

use crate::error::ConfigError;

/// An address the runtime asked for, and where it asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    /// The address (IPv4-mapped IPv6 read as IPv4). A prefix given with it
    /// is checked for form and otherwise ignored, as host-local does: the
    /// range's subnet decides the prefix.
    pub ip: IpAddr,
    /// `args.cni.ips[0]`, `runtimeConfig.ips[1]` or `CNI_ARGS IP`.
    pub source: String,
}

/// The addresses requested for this attachment: `args.cni.ips` and
/// `runtimeConfig.ips` (the `ips` capability) together; `CNI_ARGS` `IP`
/// only when neither gives any, since CONVENTIONS.md says a plugin that
/// understands `args` "must ignore the CNI_ARGS Field" then. (host-local
/// takes the union of all three.) Other `CNI_ARGS` keys are ignored.
///
/// A malformed entry is code 7 naming it; a malformed `CNI_ARGS` code 4.
pub fn requested_ips(conf: &NetConf, cni_args: &str) -> Result<Vec<Requested>, Error> {
    read(conf, cni_args).map_err(Error::from)
}

fn read(conf: &NetConf, cni_args: &str) -> Result<Vec<Requested>, ConfigError> {
    let mut out: Vec<Requested> = Vec::new();
    // Keys found as host-local's Go structs find them: "IPs" is "ips".
    let args_ips = conf.args.as_ref().and_then(|a| a.cni_value("ips"));
    let runtime_ips = conf.runtime_config.as_ref().and_then(|rc| rc.value("ips"));
    for (field, list) in [
        ("args.cni.ips", args_ips),
        ("runtimeConfig.ips", runtime_ips),
    ] {
        let Some(list) = list.filter(|v| !v.is_null()) else {
            continue;
        };
        let items = list.as_array().ok_or_else(|| {
            ConfigError::invalid(field, list, "expected a list of \"<ip>[/<prefix>]\"")
        })?;
        for (i, item) in items.iter().enumerate() {
            let here = format!("{field}[{i}]");
            let text = item
                .as_str()
                .ok_or_else(|| ConfigError::invalid(&here, item, "expected a string"))?;
            let ip = parse_requested(text).ok_or_else(|| {
                ConfigError::invalid(&here, text, "not an IP address with an optional /prefix")
            })?;
            push_unique(&mut out, ip, here);
        }
    }
    if out.is_empty() {
        // A malformed pair is code 4, "invalid CNI_ARGS", as everywhere.
        let args = cni_types::CniArgs::parse(cni_args)?;
        if let Some(text) = args.get("IP").filter(|t| !t.is_empty()) {
            let ip = parse_requested(text).ok_or_else(|| ConfigError::CniArgsIp {
                text: text.to_owned(),
            })?;
            push_unique(&mut out, ip, "CNI_ARGS IP".to_owned());
        }
    }
    Ok(out)
}

fn push_unique(out: &mut Vec<Requested>, ip: IpAddr, source: String) {
    if !out.iter().any(|r| r.ip == ip) {
        out.push(Requested { ip, source });
    }
}

/// `<ip>` or `<ip>/<prefix>`.
fn parse_requested(text: &str) -> Option<IpAddr> {
    let ip = match text.split_once('/') {
        Some(_) => text.parse::<IpNetwork>().ok()?.addr(),
        None => text.parse().ok()?,
    };
    Some(ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use cni_types::Code;

    use super::*;

    fn conf() -> NetConf {
        NetConf::from_json(br#"{"cniVersion": "1.1.0", "name": "n"}"#).unwrap()
    }

    #[test]
    fn a_malformed_cni_args_is_code_4_naming_the_pair() {
        let err = requested_ips(&conf(), "IP").unwrap_err();
        assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES, "{err:?}");
        assert_eq!(err.msg, "invalid CNI_ARGS");
        assert!(err.details.contains("IP"), "{err:?}");
    }

    #[test]
    fn a_cni_args_ip_that_is_no_address_is_code_4_naming_it() {
        let err = requested_ips(&conf(), "IP=nonsense").unwrap_err();
        assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES, "{err:?}");
        assert_eq!(err.msg, "invalid CNI_ARGS IP");
        assert!(err.details.contains("nonsense"), "{err:?}");
    }

    #[test]
    fn requested_addresses_are_found_under_go_spelled_keys_as_host_local_finds_them() {
        let conf: NetConf = NetConf::from_json(
            br#"{"cniVersion": "1.1.0", "name": "n",
                "runtimeConfig": {"IPs": ["10.1.2.7/24"], "ipRanges": null},
                "args": {"CNI": {"Ips": ["10.1.2.8"]}}}"#,
        )
        .unwrap();
        let got = requested_ips(&conf, "").unwrap();
        let ips: Vec<String> = got.iter().map(|r| r.ip.to_string()).collect();
        assert_eq!(ips, ["10.1.2.8", "10.1.2.7"]);
        assert_eq!(got[1].source, "runtimeConfig.ips[0]");
    }
}
