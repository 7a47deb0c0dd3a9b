//! ADD results (SPEC-1.0.0 §2 ADD, §5 Success; SPEC-0.4.0 and the 0.1.0
//! proposal for the older layouts), read from each version's lifecycle.

use std::net::IpAddr;

use cni_types::{IpNetwork, SpecVersion};
use serde_json::Value;

use crate::call::Call;
use crate::case::{Case, Finding, Level, Verdict};
use crate::cases::lifecycle::{lifecycle, result_of};
use crate::session::Session;
use crate::target::Kind;

/// Applies `problems` to the first ADD result of every version; versions
/// whose ADD failed are left to ADD-SUCCEEDS.
pub fn each_result(s: &Session, problems: impl Fn(&SpecVersion, &Value) -> Vec<String>) -> Verdict {
    let mut findings = Vec::new();
    for version in s.versions() {
        let life = lifecycle(s, version);
        if let Some(result) = &life.result {
            findings.extend(
                problems(version, result)
                    .into_iter()
                    .map(|p| Finding::on(&life.add, format!("{version}: {p}"))),
            );
        }
    }
    Verdict::from_findings(findings)
}

fn succeeds(s: &Session) -> Verdict {
    let findings = s
        .versions()
        .iter()
        .flat_map(|v| {
            let life = lifecycle(s, v);
            let call = &life.add;
            result_of(call)
                .is_none()
                .then(|| Finding::on(call, format!("{}: {}", call.step, failure(call))))
        })
        .collect();
    Verdict::from_findings(findings)
}

/// Why a call is not a success with one JSON object.
pub fn failure(call: &Call) -> String {
    if call.succeeded() {
        "exit status 0 without one JSON object on stdout".into()
    } else {
        format!("failed ({})", call.outcome())
    }
}

/// Whether `version` has the 0.3.0 layout (`ips`, `interfaces`), not the
/// 0.1.0 one (`ip4`, `ip6`).
fn has_ips(version: &SpecVersion) -> bool {
    *version >= SpecVersion::V0_3_0
}

fn layout(s: &Session) -> Verdict {
    each_result(s, |version, result| {
        let mut problems = Vec::new();
        let (wrong, right): (&[&str], &[&str]) = if has_ips(version) {
            (&["ip4", "ip6"], &["ips", "interfaces"])
        } else {
            (&["ips", "interfaces"], &["ip4", "ip6"])
        };
        for key in wrong {
            if result.get(key).is_some() {
                problems.push(format!(
                    "has `{key}`, which this version does not define (it uses {})",
                    right.join(", ")
                ));
            }
        }
        if !has_ips(version) {
            return problems;
        }
        let needs_version = *version < SpecVersion::V1_0_0;
        for (i, ip) in list(result, "ips").iter().enumerate() {
            match (ip.get("version"), needs_version) {
                (None, true) => problems.push(format!("ips[{i}] has no `version`")),
                (Some(_), false) => {
                    problems.push(format!("ips[{i}] has `version`, which 1.0.0 removed"))
                }
                (Some(v), true) => {
                    let family = ip["address"]
                        .as_str()
                        .and_then(|a| a.parse::<IpNetwork>().ok())
                        .map(|n| if n.is_ipv4() { "4" } else { "6" });
                    if v.as_str()
                        .is_none_or(|v| Some(v) != family && family.is_some())
                    {
                        problems.push(format!(
                            "ips[{i}].version is {v}, the address is IPv{}",
                            family.unwrap_or("?")
                        ));
                    }
                }
                (None, false) => {}
            }
        }
        problems
    })
}

/// The array at `key`, or none.
pub fn list<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn cni_version(s: &Session) -> Verdict {
    each_result(s, |version, result| {
        match result.get("cniVersion").and_then(Value::as_str) {
            Some(v) if v == version.to_string() => vec![],
            other => vec![format!(
                "cniVersion is {other:?}, the configuration's is \"{version}\""
            )],
        }
    })
}

/// The problems with the addresses of one result.
fn address_problems(version: &SpecVersion, result: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let mut cidr = |path: String, v: &Value| {
        if v.as_str()
            .and_then(|s| s.parse::<IpNetwork>().ok())
            .is_none()
        {
            problems.push(format!("{path} = {v} is not an address in CIDR notation"));
        }
    };
    let mut cidrs = Vec::new();
    let mut ips = Vec::new();
    if has_ips(version) {
        for (i, ip) in list(result, "ips").iter().enumerate() {
            cidrs.push((format!("ips[{i}].address"), ip["address"].clone()));
            ips.push((format!("ips[{i}].gateway"), ip.get("gateway")));
        }
        for (i, route) in list(result, "routes").iter().enumerate() {
            cidrs.push((format!("routes[{i}].dst"), route["dst"].clone()));
            ips.push((format!("routes[{i}].gw"), route.get("gw")));
        }
    } else {
        for family in ["ip4", "ip6"] {
            let Some(section) = result.get(family) else {
                continue;
            };
            cidrs.push((format!("{family}.ip"), section["ip"].clone()));
            ips.push((format!("{family}.gateway"), section.get("gateway")));
            for (i, route) in list(section, "routes").iter().enumerate() {
                cidrs.push((format!("{family}.routes[{i}].dst"), route["dst"].clone()));
                ips.push((format!("{family}.routes[{i}].gw"), route.get("gw")));
            }
        }
    }
    for (i, ns) in list(&result["dns"], "nameservers").iter().enumerate() {
        ips.push((format!("dns.nameservers[{i}]"), Some(ns)));
    }
    for (path, v) in cidrs {
        cidr(path, &v);
    }
    for (path, v) in ips {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            continue;
        };
        if v.as_str().and_then(|s| s.parse::<IpAddr>().ok()).is_none() {
            problems.push(format!("{path} = {v} is not an IP address"));
        }
    }
    problems
}

fn addresses(s: &Session) -> Verdict {
    each_result(s, address_problems)
}

fn interface_indices(s: &Session) -> Verdict {
    each_result(s, |version, result| {
        if !has_ips(version) {
            return vec![];
        }
        let count = list(result, "interfaces").len();
        list(result, "ips")
            .iter()
            .enumerate()
            .filter_map(|(i, ip)| {
                let index = ip.get("interface")?;
                match index.as_u64() {
                    Some(n) if (n as usize) < count => None,
                    _ => Some(format!(
                        "ips[{i}].interface = {index} but `interfaces` has {count} entries"
                    )),
                }
            })
            .collect()
    })
}

fn sandbox(s: &Session) -> Verdict {
    let netns = s.netns().display().to_string();
    let ifname = s.target().ifname.clone();
    each_result(s, |_, result| {
        list(result, "interfaces")
            .iter()
            .filter(|i| i["name"] == ifname.as_str())
            .filter(|i| i["sandbox"] != netns.as_str())
            .map(|i| {
                format!(
                    "interface {ifname} has sandbox {}, CNI_NETNS is {netns:?}",
                    i.get("sandbox").unwrap_or(&Value::Null)
                )
            })
            .collect()
    })
}

fn ipam_abbreviated(s: &Session) -> Verdict {
    if s.kind() != Kind::Ipam {
        return Verdict::Skip("for IPAM plugins".into());
    }
    each_result(s, |_, result| {
        let mut problems = Vec::new();
        if result.get("interfaces").is_some() {
            problems.push("has `interfaces`".into());
        }
        for (i, ip) in list(result, "ips").iter().enumerate() {
            if ip.get("interface").is_some() {
                problems.push(format!("ips[{i}] has `interface`"));
            }
        }
        problems
    })
}

fn keeps_prev_result(s: &Session) -> Verdict {
    if s.kind() != Kind::Chained {
        return Verdict::Skip("for chained plugins".into());
    }
    let mut findings = Vec::new();
    for version in s.versions().iter().filter(|v| has_ips(v)) {
        let life = lifecycle(s, version);
        let (Some(result), Some(prev)) = (&life.result, life.add_config.get("prevResult")) else {
            continue;
        };
        for ip in list(prev, "ips") {
            let kept = list(result, "ips")
                .iter()
                .any(|r| r["address"] == ip["address"]);
            if !kept {
                findings.push(Finding::on(
                    &life.add,
                    format!(
                        "{version}: prevResult's address {} is missing from the result",
                        ip["address"]
                    ),
                ));
            }
        }
    }
    Verdict::from_findings(findings)
}

/// The cases of this section.
pub const CASES: [Case; 8] = [
    Case {
        id: "ADD-SUCCEEDS",
        spec: "SPEC-1.0.0 §2 ADD",
        quote: "If the CNI plugin is successful, it must output a result structure (see below) on standard out.",
        level: Level::Must,
        ipam_level: None,
        check: succeeds,
    },
    Case {
        id: "ADD-LAYOUT",
        spec: "SPEC-1.0.0 §5 Success; SPEC-0.4.0 Result; SPEC-0.1.0 Result",
        quote: "SPEC-0.1.0: `\"ip4\": {\"ip\": <ipv4-and-subnet-in-CIDR>, ...}, \"ip6\": {...}`; SPEC-0.4.0: `\"interfaces\": [...], \"ips\": [{\"version\": \"<4-or-6>\", \"address\": \"<ip-and-prefix-in-CIDR>\", ...}]`; SPEC-1.0.0: `ips`: `address`, `gateway`, `interface` (no `version`)",
        level: Level::Must,
        ipam_level: None,
        check: layout,
    },
    Case {
        id: "ADD-CNIVERSION",
        spec: "SPEC-1.0.0 §5 Success",
        quote: "`cniVersion`: The same version supplied on input",
        level: Level::Must,
        ipam_level: None,
        check: cni_version,
    },
    Case {
        id: "ADD-ADDRESSES",
        spec: "SPEC-1.0.0 §5 Success",
        quote: "`address` (string): an IP address in CIDR notation ... `dst`: The destination of the route, in CIDR notation ... Each entry in the list is a string containing either an IPv4 or an IPv6 address.",
        level: Level::Must,
        ipam_level: None,
        check: addresses,
    },
    Case {
        id: "ADD-INTERFACE-INDEX",
        spec: "SPEC-1.0.0 §5 Success",
        quote: "`interface` (uint): the index into the `interfaces` list for a CNI Plugin Result indicating which interface this IP configuration should be applied to.",
        level: Level::Must,
        ipam_level: None,
        check: interface_indices,
    },
    Case {
        id: "ADD-SANDBOX",
        spec: "SPEC-1.0.0 §5 Success",
        quote: "`sandbox`: ... For interfaces created inside the container, this should be the value passed via `CNI_NETNS`.",
        level: Level::Should,
        ipam_level: None,
        check: sandbox,
    },
    Case {
        id: "ADD-IPAM-ABBREVIATED",
        spec: "SPEC-1.0.0 §5 Delegated plugins (IPAM)",
        quote: "Delegated IPAM plugins must return an abbreviated Success object. Specifically, it is missing the `interfaces` array, as well as the `interface` entry in `ips`.",
        level: Level::Must,
        ipam_level: None,
        check: ipam_abbreviated,
    },
    Case {
        id: "ADD-PREVRESULT-KEPT",
        spec: "SPEC-1.0.0 §5 Success",
        quote: "Plugins provided a `prevResult` key as part of their request configuration must output it as their result, with any possible modifications made by that plugin included.",
        level: Level::Must,
        ipam_level: None,
        check: keeps_prev_result,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bad_gateway_and_a_bare_address_are_both_reported() {
        let result = json!({"ips": [{"address": "10.0.0.2", "gateway": "10.0.0.300"}]});
        let problems = address_problems(&SpecVersion::V1_0_0, &result);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    #[test]
    fn an_old_layout_is_read_from_ip4() {
        let result = json!({"ip4": {"ip": "10.0.0.2/24", "routes": [{"dst": "0.0.0.0/0"}]}});
        assert!(address_problems(&SpecVersion::V0_2_0, &result).is_empty());
    }
}
