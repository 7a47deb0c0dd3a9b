//! `dns-mac`: a small chained plugin, written to be copied.
//!
//! It runs after an interface plugin in a configuration list and changes the
//! result it receives as `prevResult`:
//! - the container interface (`CNI_IFNAME` in `CNI_NETNS`) gets the MAC
//!   address the runtime or the user asked for, from the places and in the
//!   order the reference interface plugins read it
//!   ([`requested_mac`] with [`MacPrecedence::Interface`]): the `mac`
//!   capability (`runtimeConfig.mac`), `args.cni.mac`, `MAC` in `CNI_ARGS`,
//!   then the static `mac` key;
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

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::conventions::{requested_mac, MacPrecedence};
use cni_types::{Code, Dns, Error, Mac, NetConf, Result100};
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

type Req<'a> = Request<'a, NetConf<Fields>>;

/// What the request asks for, validated.
struct Wanted {
    mac: Option<Mac>,
    dns: Dns,
}

impl Wanted {
    /// Validates the request before anything is done: a bad MAC is code 7
    /// naming where it came from, a bad nameserver code 7 naming it.
    fn from(req: &Req) -> Result<Wanted, Error> {
        let conf = &req.config;
        let own = conf.plugin.mac.as_deref();
        let mac = requested_mac(conf, &req.args, own, MacPrecedence::Interface)?;
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
        Ok(Wanted {
            mac: mac.map(|m| m.mac),
            dns,
        })
    }
}

/// Where in `result.interfaces` the container-side interface this
/// invocation is about is.
fn container_interface(result: &Result100, req: &Req) -> Option<usize> {
    let sandbox = req.sandbox();
    // The one in the namespace; else one that names no namespace at all
    // (some plugins leave `sandbox` empty). Never a host-side namesake.
    let named = |sandbox: &str| {
        result
            .interfaces
            .iter()
            .position(|i| i.name == req.ifname && i.sandbox == sandbox)
    };
    named(&sandbox).or_else(|| named(""))
}

impl Plugin for DnsMac {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let wanted = Wanted::from(req)?;
        // Code 7, "prevResult required", when not chained.
        let mut result = req.prev_result()?.into_owned();
        if let Some(mac) = wanted.mac {
            let i = container_interface(&result, req).ok_or_else(|| {
                Error::invalid_config(
                    "prevResult",
                    format!("no container interface named {:?}", req.ifname),
                )
            })?;
            result.interfaces[i].mac = mac.to_string();
        }
        merge_dns(&mut result.dns, &wanted.dns);
        Ok(result.into())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let wanted = Wanted::from(req)?;
        let result = req.prev_result()?; // only read: not copied
        if let Some(mac) = wanted.mac {
            let found = container_interface(&result, req)
                .map(|i| result.interfaces[i].mac.as_str())
                .unwrap_or_default();
            if found.parse::<Mac>() != Ok(mac) {
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

    fn add(stdin: String) -> cni_skel::Outcome {
        TestRequest::add()
            .stdin(stdin)
            .run(&DnsMac, &PluginInfo::all())
    }

    #[test]
    fn add_sets_the_runtime_mac_and_merges_dns_into_the_previous_result() {
        let out = add(conf(
            json!({"mac": "c2:00:00:00:00:09", "runtimeConfig": {"mac": "C2:11:22:33:44:55"}}),
        ));
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
        let v = out.json();
        assert_eq!(v["interfaces"][1]["mac"], "c2:11:22:33:44:55");
        assert_eq!(v["dns"]["nameservers"], json!(["10.0.0.1", "10.0.0.53"]));
        assert_eq!(v["dns"]["search"], json!(["svc.local"]));
        assert_eq!(v["ips"][0]["interface"], 1);
    }

    #[test]
    fn a_mac_asked_for_in_args_or_cni_args_is_applied_as_the_reference_plugins_do() {
        let args =
            json!({"mac": "c2:00:00:00:00:09", "args": {"cni": {"mac": "c2:00:00:00:00:0a"}}});
        let out = add(conf(args.clone()));
        assert_eq!(out.json()["interfaces"][1]["mac"], "c2:00:00:00:00:0a");
        let out = TestRequest::add()
            .env("CNI_ARGS", "IgnoreUnknown=1;MAC=c2-00-00-00-00-0b")
            .stdin(conf(json!({"mac": "c2:00:00:00:00:09"})))
            .run(&DnsMac, &PluginInfo::all());
        assert_eq!(out.json()["interfaces"][1]["mac"], "c2:00:00:00:00:0b");
    }

    #[test]
    fn bad_values_are_code_7_naming_the_field() {
        for (extra, field) in [
            (
                json!({"mac": "zz:00:00:00:00:01"}),
                "invalid MAC address in mac",
            ),
            (
                json!({"mac": "01:00:00:00:00:01"}),
                "invalid MAC address in mac",
            ),
            (
                json!({"runtimeConfig": {"mac": "nope"}}),
                "invalid MAC address in runtimeConfig.mac",
            ),
            (
                json!({"dns": {"nameservers": ["ten"]}}),
                "invalid dns.nameservers[0]",
            ),
        ] {
            let err = add(conf(extra)).error().unwrap();
            assert_eq!(
                (err.code, err.msg.as_str()),
                (Code::INVALID_NETWORK_CONFIG, field)
            );
        }
    }

    #[test]
    fn add_without_a_previous_result_is_code_7() {
        let out = add(json!({"cniVersion": "1.0.0", "name": "net", "type": "dns-mac"}).to_string());
        let err = out.error().unwrap();
        assert_eq!(
            (err.code, err.msg.as_str()),
            (Code::INVALID_NETWORK_CONFIG, "prevResult required")
        );
        assert!(err.details.contains("dns-mac"), "{err}");
    }

    #[test]
    fn check_passes_on_its_own_output_and_fails_without_the_change() {
        let mac = json!({"mac": "c2:00:00:00:00:09"});
        let mut checked: serde_json::Value = serde_json::from_str(&conf(mac.clone())).unwrap();
        checked["prevResult"] = add(conf(mac.clone())).json();
        let check = |stdin: String| {
            TestRequest::check()
                .stdin(stdin)
                .run(&DnsMac, &PluginInfo::all())
        };
        assert_eq!(check(checked.to_string()).exit_code, 0);
        // The same address in another notation is the same address.
        checked["prevResult"]["interfaces"][1]["mac"] = json!("C2-00-00-00-00-09");
        assert_eq!(check(checked.to_string()).exit_code, 0);
        assert_eq!(check(conf(mac)).error().unwrap().code, NOT_APPLIED);
    }

    #[test]
    fn del_is_idempotent() {
        for _ in 0..2 {
            let out = TestRequest::del()
                .stdin(conf(json!({})))
                .run(&DnsMac, &PluginInfo::all());
            assert_eq!(out.exit_code, 0);
        }
    }
}
