//! `delegator`: the skeleton of an interface plugin that delegates address
//! management to its IPAM plugin (spec section 4), without touching the
//! kernel (the `veth` sample does that part).
//!
//! ADD runs the `ipam.type` plugin with the same environment and
//! configuration, checks that every address family listed in
//! `requireFamilies` was assigned, and reports the container interface
//! (`CNI_IFNAME` in `CNI_NETNS`) with the addresses on it. When anything
//! after the IPAM ADD fails, the IPAM DEL runs before the error is returned,
//! so no address leaks. DEL, CHECK, GC and STATUS are forwarded to IPAM.
//!
//! ```json
//! {"type": "delegator", "requireFamilies": ["4"],
//!  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.1.0.0/24"}]]}}
//! ```

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Code, Error, Interface, IpFamily, NetConf};
use serde::Deserialize;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI delegator sample plugin v0.1.0";

/// The plugin's own configuration keys.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// Address families the interface needs: `"4"`, `"6"`.
    #[serde(rename = "requireFamilies", default)]
    pub require_families: Vec<IpFamily>,
}

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Delegator;

impl Plugin for Delegator {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::OnlyIpam;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let ipam = req.config.ipam_type()?;
        let result = cni_invoke::add_with_cleanup(ipam, req, |ipam_result| {
            let mut result = ipam_result.to_current()?;
            for family in &req.config.plugin.require_families {
                let want_v4 = *family == IpFamily::V4;
                if !result.ips.iter().any(|ip| ip.address.is_ipv4() == want_v4) {
                    return Err(BoxError::from(
                        Error::new(
                            Code::INVALID_NETWORK_CONFIG,
                            "IPAM assigned no address of a required family",
                        )
                        .with_details(format!(
                            "requireFamilies has {family:?}; {ipam} returned {} address(es)",
                            result.ips.len()
                        )),
                    ));
                }
            }
            result.interfaces = vec![Interface {
                sandbox: req.sandbox(),
                ..Interface::named(req.ifname.clone())
            }];
            for ip in &mut result.ips {
                ip.interface = Some(0);
            }
            Ok(result)
        })?;
        Ok(result.into())
    }

    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        cni_invoke::delegate_del(req.config.ipam_type()?, req)?;
        Ok(())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        cni_invoke::delegate_check(req.config.ipam_type()?, req)?;
        Ok(())
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        cni_invoke::delegate_gc(req.config.ipam_type()?, req)?;
        Ok(())
    }

    fn status(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        cni_invoke::delegate_status(req.config.ipam_type()?, req)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use cni_skel::TestRequest;
    use cni_version::PluginInfo;

    use super::*;

    fn add() -> TestRequest {
        TestRequest::new("ADD")
            .env("CNI_CONTAINERID", "c1")
            .env("CNI_NETNS", "/var/run/netns/c1")
            .env("CNI_IFNAME", "eth0")
    }

    #[test]
    fn delegating_without_cni_path_is_code_4_naming_it() {
        let out = add()
            .stdin(r#"{"cniVersion":"1.0.0","name":"n","type":"delegator","ipam":{"type":"host-local"}}"#)
            .run(&Delegator, &PluginInfo::all());
        let err = out.error().unwrap();
        assert_eq!(err.code, Code::INVALID_ENVIRONMENT_VARIABLES);
        assert!(err.msg.contains("CNI_PATH"), "{err:?}");
    }

    #[test]
    fn a_missing_ipam_type_is_code_7() {
        let out = add()
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(r#"{"cniVersion":"1.0.0","name":"n","type":"delegator"}"#)
            .run(&Delegator, &PluginInfo::all());
        assert_eq!(out.error().unwrap().code, Code::INVALID_NETWORK_CONFIG);
    }

    #[test]
    fn an_unknown_family_is_a_config_error_naming_the_field() {
        let out = add()
            .env("CNI_PATH", "/usr/lib/cni")
            .stdin(r#"{"cniVersion":"1.0.0","name":"n","requireFamilies":["5"],"ipam":{"type":"host-local"}}"#)
            .run(&Delegator, &PluginInfo::all());
        let err = out.error().unwrap();
        assert_eq!(err.code, Code::DECODING_FAILURE);
        assert!(err.msg.contains("requireFamilies"), "{err:?}");
    }
}
