//! `dns-mac`: a small chained plugin, written to be copied.
//!
//! It runs after an interface plugin in a configuration list and changes the
//! result it receives as `prevResult`:
//! - the container interface (`CNI_IFNAME` in `CNI_NETNS`) gets the MAC
//!   address from the `mac` capability (`runtimeConfig.mac`), or from the
//!   static `mac` key when the runtime gives none;
//! - the configuration's `dns` section is merged into the result's DNS.
//!
//! CHECK verifies that the previous result carries both changes; DEL has
//! nothing to undo and always succeeds. This sample only edits the result: a
//! real plugin would also apply the MAC to the kernel interface, inside the
//! namespace, before reporting it.
//!
//! ```json
//! {"type": "dns-mac", "capabilities": {"mac": true}, "mac": "c2:00:00:00:00:01",
//!  "dns": {"nameservers": ["10.0.0.53"], "search": ["svc.local"]}}
//! ```

use cni_skel::{BoxError, Plugin, Reply, Request};
use cni_types::{Code, Dns, Error, Interface, NetConf, Result100};
use serde::Deserialize;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI dns-mac sample plugin v0.1.0";

/// CHECK found the previous result without this plugin's change.
pub const NOT_APPLIED: Code = Code(100);

/// The plugin's own configuration keys.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// A static MAC address, used when the runtime passes none.
    #[serde(default)]
    pub mac: Option<String>,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct DnsMac;

/// What the configuration asks for, validated.
struct Wanted {
    mac: Option<String>,
    dns: Dns,
}

impl Wanted {
    /// Validates the configuration: a bad value is code 7 naming the field.
    fn from(conf: &NetConf<Fields>) -> Result<Wanted, Error> {
        let runtime_mac = conf
            .runtime_config
            .as_ref()
            .and_then(|rc| rc.mac())
            .transpose()?;
        let (field, mac) = match runtime_mac {
            Some(mac) => ("runtimeConfig.mac", Some(mac)),
            None => ("mac", conf.plugin.mac.clone()),
        };
        let mac = mac
            .map(|m| {
                normalize_mac(&m).ok_or_else(|| {
                    Error::invalid_config(field, format!("{m:?}: not a unicast MAC address"))
                })
            })
            .transpose()?;
        let dns = conf.dns.clone().unwrap_or_default();
        for (i, ns) in dns.nameservers.iter().enumerate() {
            // A zone (fe80::1%eth0) is allowed after the address.
            let addr = ns.split('%').next().unwrap_or_default();
            if addr.parse::<std::net::IpAddr>().is_err() {
                return Err(Error::invalid_config(
                    &format!("dns.nameservers[{i}]"),
                    format!("{ns:?}: not an IP address"),
                ));
            }
        }
        Ok(Wanted { mac, dns })
    }
}

/// `aa:bb:cc:dd:ee:ff` in lower case, if `s` is a unicast MAC-48.
fn normalize_mac(s: &str) -> Option<String> {
    let octets: Vec<u8> = s
        .split([':', '-'])
        .map(|o| u8::from_str_radix(o, 16).ok().filter(|_| o.len() == 2))
        .collect::<Option<_>>()?;
    (octets.len() == 6 && octets[0] & 1 == 0).then(|| {
        octets
            .iter()
            .map(|o| format!("{o:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    })
}

/// The previous result, in the current shape; code 7 when there is none.
fn previous(req: &Request<NetConf<Fields>>) -> Result<Result100, BoxError> {
    let prev = req.config.prev_result.as_ref().ok_or_else(|| {
        Error::new(
            Code::INVALID_NETWORK_CONFIG,
            "dns-mac must be chained after an interface plugin",
        )
        .with_details("the configuration has no prevResult")
    })?;
    Ok(prev.to_current()?)
}

/// The container-side interface this invocation is about.
fn container_interface<'r>(
    result: &'r mut Result100,
    req: &Request<NetConf<Fields>>,
) -> Option<&'r mut Interface> {
    let netns = req
        .netns
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The one in the namespace; else one that names no namespace at all
    // (some plugins leave `sandbox` empty). Never a host-side namesake.
    let named = |i: &Interface| i.name == req.ifname;
    let index = result
        .interfaces
        .iter()
        .position(|i| named(i) && i.sandbox == netns)
        .or_else(|| {
            result
                .interfaces
                .iter()
                .position(|i| named(i) && i.sandbox.is_empty())
        })?;
    result.interfaces.get_mut(index)
}

impl Plugin for DnsMac {
    type Config = NetConf<Fields>;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let wanted = Wanted::from(&req.config)?;
        let mut result = previous(req)?;
        if let Some(mac) = wanted.mac {
            let iface = container_interface(&mut result, req).ok_or_else(|| {
                Error::new(
                    Code::INVALID_NETWORK_CONFIG,
                    "no container interface in prevResult",
                )
                .with_details(format!("expected an interface named {:?}", req.ifname))
            })?;
            iface.mac = mac;
        }
        merge_dns(&mut result.dns, &wanted.dns);
        Ok(result.into())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let wanted = Wanted::from(&req.config)?;
        let mut result = previous(req)?;
        if let Some(mac) = wanted.mac {
            let found = container_interface(&mut result, req)
                .map(|i| i.mac.clone())
                .unwrap_or_default();
            if found != mac {
                return Err(Error::new(
                    NOT_APPLIED,
                    "container interface does not have the configured MAC",
                )
                .with_details(format!("want {mac}, prevResult has {found:?}"))
                .into());
            }
        }
        let mut merged = result.dns.clone();
        merge_dns(&mut merged, &wanted.dns);
        if merged != result.dns {
            return Err(
                Error::new(NOT_APPLIED, "prevResult DNS lacks the configured settings").into(),
            );
        }
        Ok(())
    }

    fn del(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        // Nothing on the host to undo: DEL is idempotent by construction.
        Ok(())
    }
}

/// Adds what `want` has and `dns` lacks; the result's own domain wins.
fn merge_dns(dns: &mut Dns, want: &Dns) {
    let add = |into: &mut Vec<String>, from: &[String]| {
        for item in from {
            if !into.contains(item) {
                into.push(item.clone());
            }
        }
    };
    add(&mut dns.nameservers, &want.nameservers);
    add(&mut dns.search, &want.search);
    add(&mut dns.options, &want.options);
    if dns.domain.is_empty() {
        dns.domain = want.domain.clone();
    }
}

#[cfg(test)]
mod tests {
    use cni_skel::TestRequest;
    use cni_version::PluginInfo;
    use serde_json::json;

    use super::*;

    fn conf(extra: serde_json::Value) -> String {
        let mut c = json!({
            "cniVersion": "1.0.0", "name": "net", "type": "dns-mac",
            "dns": {"nameservers": ["10.0.0.53"], "search": ["svc.local"]},
            "prevResult": {"cniVersion": "1.0.0",
                "interfaces": [{"name": "veth1"}, {"name": "eth0", "sandbox": "/var/run/netns/c1"}],
                "ips": [{"address": "10.0.0.2/24", "interface": 1}],
                "dns": {"nameservers": ["10.0.0.1"]}}
        });
        c.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        c.to_string()
    }

    fn req(cmd: &str, stdin: String) -> TestRequest {
        TestRequest::new(cmd)
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/var/run/netns/c1")
            .env("CNI_IFNAME", "eth0")
            .stdin(stdin)
    }

    #[test]
    fn add_sets_the_runtime_mac_and_merges_dns_into_the_previous_result() {
        let out = req(
            "ADD",
            conf(
                json!({"mac": "c2:00:00:00:00:09", "runtimeConfig": {"mac": "C2:11:22:33:44:55"}}),
            ),
        )
        .run(&DnsMac, &PluginInfo::all());
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
        let v = out.json();
        assert_eq!(v["interfaces"][1]["mac"], "c2:11:22:33:44:55");
        assert_eq!(v["dns"]["nameservers"], json!(["10.0.0.1", "10.0.0.53"]));
        assert_eq!(v["dns"]["search"], json!(["svc.local"]));
        assert_eq!(v["ips"][0]["interface"], 1);
    }

    #[test]
    fn bad_values_are_code_7_naming_the_field() {
        for (extra, field) in [
            (json!({"mac": "zz:00:00:00:00:01"}), "invalid mac"),
            (json!({"mac": "01:00:00:00:00:01"}), "invalid mac"),
            (
                json!({"runtimeConfig": {"mac": "nope"}}),
                "invalid runtimeConfig.mac",
            ),
            (
                json!({"dns": {"nameservers": ["ten"]}}),
                "invalid dns.nameservers[0]",
            ),
        ] {
            let out = req("ADD", conf(extra)).run(&DnsMac, &PluginInfo::all());
            let err = out.error().unwrap();
            assert_eq!(
                (err.code, err.msg.as_str()),
                (Code::INVALID_NETWORK_CONFIG, field)
            );
        }
    }

    #[test]
    fn add_without_a_previous_result_is_code_7() {
        let out = req(
            "ADD",
            json!({"cniVersion": "1.0.0", "name": "net"}).to_string(),
        )
        .run(&DnsMac, &PluginInfo::all());
        assert_eq!(out.error().unwrap().code, Code::INVALID_NETWORK_CONFIG);
    }

    #[test]
    fn check_passes_on_its_own_output_and_fails_without_the_change() {
        let add =
            req("ADD", conf(json!({"mac": "c2:00:00:00:00:09"}))).run(&DnsMac, &PluginInfo::all());
        let mut checked: serde_json::Value =
            serde_json::from_str(&conf(json!({"mac": "c2:00:00:00:00:09"}))).unwrap();
        checked["prevResult"] = add.json();
        assert_eq!(
            req("CHECK", checked.to_string())
                .run(&DnsMac, &PluginInfo::all())
                .exit_code,
            0
        );
        let out = req("CHECK", conf(json!({"mac": "c2:00:00:00:00:09"})))
            .run(&DnsMac, &PluginInfo::all());
        assert_eq!(out.error().unwrap().code, NOT_APPLIED);
    }

    #[test]
    fn del_is_idempotent() {
        for _ in 0..2 {
            assert_eq!(
                req("DEL", conf(json!({})))
                    .run(&DnsMac, &PluginInfo::all())
                    .exit_code,
                0
            );
        }
    }
}
