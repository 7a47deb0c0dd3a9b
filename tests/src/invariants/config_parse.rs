//! `config_parse`: configurations (with `prevResult`) and configuration
//! lists.

use std::collections::BTreeMap;

use cni_types::{Extra, NetConf, NetConfList, SpecVersion};
use serde_json::Value;

use super::answer::check_result_json;
use super::fail;

/// Typed plugin fields, as a plugin would declare them.
#[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize)]
struct Typed {
    #[serde(default)]
    mtu: Option<u32>,
    #[serde(rename = "ipMasq", default)]
    ip_masq: Option<bool>,
    #[serde(default)]
    bridge: Option<String>,
    #[serde(default)]
    sysctl: Option<BTreeMap<String, String>>,
    #[serde(flatten)]
    extra: Extra,
}

/// `from_json` reads straight from the bytes when it can: it must give
/// exactly what reading through a JSON value gives (the same configuration,
/// or the same error).
fn same_as_through_a_value<T>(data: &[u8]) -> Result<(), String>
where
    T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let direct = NetConf::<T>::from_json(data).map_err(|e| e.to_string());
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return match direct {
            Ok(conf) => Err(format!("not JSON, yet read as {conf:?}")),
            Err(_) => Ok(()),
        };
    };
    let through = NetConf::<T>::from_value(value).map_err(|e| e.to_string());
    if direct != through {
        return Err(format!(
            "read from the bytes: {direct:?}\nthrough a JSON value: {through:?}"
        ));
    }
    Ok(())
}

/// The `config_parse` target: read from the bytes as through a JSON value;
/// a configuration that parses prints and parses back equal (its `prevResult` in the configuration's version,
/// readable there), untyped and with typed plugin fields; a configuration
/// list likewise.
pub fn fuzz_config_parse(data: &[u8]) {
    if let Err(e) = check_config(data) {
        fail("config_parse", data, e);
    }
}

fn check_config(data: &[u8]) -> Result<(), String> {
    same_as_through_a_value::<Extra>(data)?;
    same_as_through_a_value::<Typed>(data)?;
    if let Ok(conf) = NetConf::<Extra>::from_json(data) {
        let printed = serde_json::to_vec(&conf).map_err(|e| format!("cannot print: {e}"))?;
        let back = NetConf::<Extra>::from_json(&printed)
            .map_err(|e| format!("printed configuration does not parse back ({e})"))?;
        if back != conf {
            return Err(format!(
                "configuration changes when printed: {}",
                String::from_utf8_lossy(&printed)
            ));
        }
        if let Some(prev) = &conf.prev_result {
            let version = SpecVersion::parse(conf.version())
                .map_err(|e| format!("prevResult read for version {e}"))?;
            if *prev.version() != version {
                return Err(format!(
                    "prevResult in {} for a {} configuration",
                    prev.version(),
                    conf.version()
                ));
            }
            check_result_json(&version, &prev.to_json()).map_err(|e| format!("prevResult: {e}"))?;
        }
    }
    if let Ok(conf) = NetConf::<Typed>::from_json(data) {
        let printed = serde_json::to_vec(&conf).map_err(|e| format!("cannot print: {e}"))?;
        let back = NetConf::<Typed>::from_json(&printed)
            .map_err(|e| format!("printed typed configuration does not parse back ({e})"))?;
        if back != conf {
            return Err(format!(
                "typed configuration changes when printed: {}",
                String::from_utf8_lossy(&printed)
            ));
        }
    }
    if let Ok(list) = serde_json::from_slice::<NetConfList>(data) {
        let printed = serde_json::to_vec(&list).map_err(|e| format!("cannot print: {e}"))?;
        let back = serde_json::from_slice::<NetConfList>(&printed)
            .map_err(|e| format!("printed list does not parse back ({e})"))?;
        if back != list {
            return Err(format!(
                "configuration list changes when printed: {}",
                String::from_utf8_lossy(&printed)
            ));
        }
    }
    Ok(())
}
