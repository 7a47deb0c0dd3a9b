//! The configurations the run hands the plugin: the given or a minimal
//! one, and the `prevResult` a chained plugin expects.

use std::path::Path;

use cni_types::SpecVersion;
use serde_json::{json, Map, Value};

use crate::error::SetupError;
use crate::target::{Kind, Target};

/// The addresses of the minimal configurations: TEST-NET-1 (RFC 5737),
/// documentation space that no real network routes, and it only ever
/// appears inside the namespaces of the run.
pub const TEST_SUBNET: &str = "192.0.2.0/24";

/// The result an interface plugin gives for `ifname` in `netns` with
/// `192.0.2.<host>/24`, in `version`'s layout (0.3.0 and later).
pub fn interface_result(version: &SpecVersion, netns: &Path, ifname: &str, host: u8) -> Value {
    let mut ip =
        json!({"address": format!("192.0.2.{host}/24"), "gateway": "192.0.2.1", "interface": 0});
    if *version < SpecVersion::V1_0_0 {
        ip["version"] = json!("4");
    }
    json!({
        "cniVersion": version.to_string(),
        "interfaces": [{"name": ifname, "sandbox": netns.display().to_string()}],
        "ips": [ip],
        "dns": {}
    })
}

/// The configuration every call starts from: the given one (`type`, and
/// for IPAM plugins `ipam.type`, filled in when missing) or a minimal one
/// for the kind.
pub(crate) fn base_config(
    target: &Target,
    data_dir: &Path,
) -> Result<Map<String, Value>, SetupError> {
    let name = target.plugin_name();
    let ipam = |ipam_type: &str| json!({"type": ipam_type, "subnet": TEST_SUBNET, "dataDir": data_dir.display().to_string()});
    let mut conf = match &target.config {
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err(SetupError::ConfigNotObject),
        None => {
            let mut map = Map::new();
            map.insert("name".into(), json!("cni-conformance"));
            match target.kind {
                Kind::Interface => map.insert("ipam".into(), ipam(&target.ipam)),
                Kind::Ipam => map.insert("ipam".into(), ipam(&name)),
                Kind::Chained => None,
            };
            map
        }
    };
    conf.entry("type").or_insert_with(|| json!(name));
    if target.kind == Kind::Ipam {
        if let Some(Value::Object(section)) = conf.get_mut("ipam") {
            section.entry("type").or_insert_with(|| json!(name));
        }
    }
    Ok(conf)
}
