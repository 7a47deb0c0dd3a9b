//! `loopback`: brings `lo` up in the container namespace, a drop-in
//! replacement for the reference `loopback` plugin.
//!
//! ADD sets `lo` up (whatever `CNI_IFNAME` says) and answers as the
//! reference does: the previous result untouched when there is one, else
//! `lo` (MAC `00:00:00:00:00:00`, sandbox `CNI_NETNS`) with its first IPv4
//! and first IPv6 address, in the configuration's version. DEL sets it
//! down, and succeeds when the namespace is gone (absent, or no longer a
//! namespace: [`Netns::of_for_del`]). CHECK verifies that `lo` is up.
//!
//! Where we deliberately differ: the reference prints the 1.0.0 fields
//! under any `cniVersion` (no `version` in 0.3.x and 0.4.0 `ips`,
//! `interfaces` and `ips` at 0.1.0 and 0.2.0), which SPEC-0.4.0 "Result"
//! and SPEC-0.1.0 "Result" do not allow (cni-conformance ADD-LAYOUT). Ours
//! prints each version's own layout; at 1.0.0 both print the same.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "lo", "type": "loopback"}
//! ```
//!
//! Go: containernetworking/plugins `plugins/main/loopback`.

use cni_net::{Address, NetError, Netns};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Code, Error, Interface, IpConfig, NetConf, Result100, SpecVersion};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI loopback sample plugin v0.1.0";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Loopback;

type Req<'a> = Request<'a, NetConf>;

impl Plugin for Loopback {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let netns = Netns::of(req)?;
        let addresses = netns.run(|nl| -> Result<Vec<Address>, NetError> {
            let lo = nl.link("lo")?;
            nl.set_up(lo.index)?;
            nl.addresses(Some(lo.index))
        })?;
        if let Some(odd) = addresses.iter().find(|a| !a.network.addr().is_loopback()) {
            return Err(Error::new(
                Code::INTERNAL,
                format!(
                    "loopback interface found with non-loopback address {}",
                    odd.network
                ),
            )
            .into());
        }
        if let Some(prev) = &req.config.prev_result {
            return Ok(prev.clone().into());
        }
        let mut result = Result100::new(SpecVersion::V1_0_0);
        result.interfaces.push(Interface {
            mac: "00:00:00:00:00:00".to_owned(),
            sandbox: netns.path().display().to_string(),
            ..Interface::named("lo")
        });
        // The first address of each family, IPv4 first, as the reference.
        for v4 in [true, false] {
            if let Some(a) = addresses.iter().find(|a| a.network.is_ipv4() == v4) {
                let mut ip = IpConfig::new(a.network, None);
                ip.interface = Some(0);
                result.ips.push(ip);
            }
        }
        Ok(result.into())
    }

    /// A namespace already gone is success ([`Netns::of_for_del`]).
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let Some(netns) = Netns::of_for_del(req)? else {
            return Ok(());
        };
        netns.run(|nl| -> Result<(), NetError> {
            let lo = nl.link("lo")?;
            nl.set_down(lo.index)
        })?;
        Ok(())
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let lo = Netns::of(req)?.run(|nl| nl.link("lo"))?;
        if !lo.up {
            return Err(Error::new(Code::INTERNAL, "loopback interface is down").into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use cni_net::testing::TempNetns;
    use cni_version::PluginInfo;

    use super::*;

    const CONF: &str = r#"{"cniVersion":"1.0.0","name":"lo","type":"loopback"}"#;

    #[test]
    #[ignore = "needs root: scripts/test.sh runs it"]
    fn add_brings_lo_up_and_reports_its_addresses_and_del_brings_it_down() {
        let ns = TempNetns::new("loopback").unwrap();
        let out = ns
            .request("ADD", "eth0")
            .stdin(CONF)
            .run(&Loopback, &PluginInfo::all());
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
        let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(result["interfaces"][0]["name"], "lo");
        assert_eq!(
            result["interfaces"][0]["sandbox"],
            ns.path().display().to_string()
        );
        assert_eq!(result["ips"][0]["address"], "127.0.0.1/8");
        assert!(ns.run(|nl| nl.link("lo")).unwrap().up);

        let check = ns
            .request("CHECK", "eth0")
            .stdin(CONF)
            .run(&Loopback, &PluginInfo::all());
        assert_eq!(check.exit_code, 0);
        let del = ns
            .request("DEL", "eth0")
            .stdin(CONF)
            .run(&Loopback, &PluginInfo::all());
        assert_eq!(del.exit_code, 0);
        assert!(!ns.run(|nl| nl.link("lo")).unwrap().up);
        let check = ns
            .request("CHECK", "eth0")
            .stdin(CONF)
            .run(&Loopback, &PluginInfo::all());
        assert_eq!(check.error().unwrap().msg, "loopback interface is down");
    }

    #[test]
    fn del_succeeds_when_the_namespace_is_gone() {
        let out = cni_skel::TestRequest::new("DEL")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/run/netns/cni-rs-loopback-does-not-exist")
            .env("CNI_IFNAME", "eth0")
            .stdin(CONF)
            .run(&Loopback, &PluginInfo::all());
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    }

    #[test]
    fn del_succeeds_when_the_namespace_was_unmounted_from_its_path() {
        // What a runtime leaves after unmounting a namespace: the empty
        // mount point, no longer a namespace.
        let unmounted = tempfile::NamedTempFile::new().unwrap();
        let out = cni_skel::TestRequest::new("DEL")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", unmounted.path())
            .env("CNI_IFNAME", "eth0")
            .stdin(CONF)
            .run(&Loopback, &PluginInfo::all());
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    }
}
