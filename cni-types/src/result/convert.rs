//! Conversion between result versions, following the reference library's
//! converters (`pkg/types/{020,040,100}`), with the two documented
//! improvements: an untagged 0.x address takes its family from the address,
//! and 1.1.0-only fields are dropped below 1.1.0 (route ones a 0.x result
//! carries go up to 1.x whole, as in the reference).

use std::net::IpAddr;

use cni_version::SpecVersion;

use super::{CniResult, IpConfig, IpConfig020, IpConfig040, Result020, Result040, Result100};
use crate::ip::is_ipv4;
use crate::{Dns, Interface, IpFamily, IpNetwork, Route};

/// A conversion that cannot be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// The target is not a released version.
    #[error("no converter for CNI result version {from} to {to}")]
    NoConverter {
        /// The result's version.
        from: String,
        /// The requested version.
        to: String,
    },
    /// Down to 0.1.0/0.2.0 with no address to put in `ip4` or `ip6`.
    #[error("cannot convert: no valid IP addresses")]
    NoAddresses,
}

#[derive(PartialEq)]
enum Family {
    V020,
    V040,
    V100,
}

fn family(v: &SpecVersion) -> Family {
    if *v < SpecVersion::V0_3_0 {
        Family::V020
    } else if *v < SpecVersion::V1_0_0 {
        Family::V040
    } else {
        Family::V100
    }
}

pub(super) fn convert(from: CniResult, to: &SpecVersion) -> Result<CniResult, ConvertError> {
    if !to.is_released() {
        return Err(ConvertError::NoConverter {
            from: from.version().to_string(),
            to: to.to_string(),
        });
    }
    if from.version() == to {
        return Ok(from);
    }
    let to = to.clone();
    Ok(match (from, family(&to)) {
        (CniResult::V020(r), Family::V020) => CniResult::V020(Result020 {
            cni_version: to,
            ..r
        }),
        (CniResult::V020(r), Family::V040) => {
            let mut r = v020_to_v040(r, to);
            r.routes = without_1_1_routes(r.routes);
            CniResult::V040(r)
        }
        (CniResult::V020(r), Family::V100) => {
            CniResult::V100(v040_to_v100(v020_to_v040(r, SpecVersion::V0_4_0), to))
        }
        (CniResult::V040(r), Family::V020) => CniResult::V020(v040_to_v020(r, to)?),
        (CniResult::V040(r), Family::V040) => CniResult::V040(Result040 {
            cni_version: to,
            interfaces: r.interfaces,
            ips: r
                .ips
                .into_iter()
                .map(|ip| IpConfig040 {
                    version: Some(ip.family()),
                    ..ip
                })
                .collect(),
            routes: without_1_1_routes(r.routes),
            dns: r.dns,
        }),
        (CniResult::V040(r), Family::V100) => CniResult::V100(v040_to_v100(r, to)),
        (CniResult::V100(r), Family::V020) => CniResult::V020(v100_to_v020(r, to)?),
        (CniResult::V100(r), Family::V040) => CniResult::V040(v100_to_v040(r, to)),
        (CniResult::V100(r), Family::V100) => CniResult::V100(Result100 {
            interfaces: r
                .interfaces
                .into_iter()
                .map(|i| keep_1_1(&to, i, Interface::without_1_1_fields))
                .collect(),
            routes: r
                .routes
                .into_iter()
                .map(|rt| keep_1_1(&to, rt, Route::without_1_1_fields))
                .collect(),
            ips: r.ips,
            dns: r.dns,
            cni_version: to,
        }),
    })
}

/// `item` as is at 1.1.0 and above, stripped of its 1.1.0 fields below.
fn keep_1_1<T>(to: &SpecVersion, item: T, strip: fn(T) -> T) -> T {
    if *to >= SpecVersion::V1_1_0 {
        item
    } else {
        strip(item)
    }
}

/// Routes without their 1.1.0-only fields (for any 0.x result).
fn without_1_1_routes(routes: Vec<Route>) -> Vec<Route> {
    routes.into_iter().map(Route::without_1_1_fields).collect()
}

/// 0.1.0/0.2.0 up to 0.3.x/0.4.0: `ip4` then `ip6` become `ips`, their routes
/// become `routes` (whole: the caller strips the 1.1.0 fields unless the
/// result goes on to 1.1.0).
fn v020_to_v040(r: Result020, to: SpecVersion) -> Result040 {
    let mut ips = Vec::new();
    let mut routes = Vec::new();
    for (ip, family) in [(r.ip4, IpFamily::V4), (r.ip6, IpFamily::V6)] {
        if let Some(ip) = ip {
            ips.push(IpConfig040 {
                version: Some(family),
                interface: None,
                address: ip.ip,
                gateway: ip.gateway,
            });
            routes.extend(ip.routes);
        }
    }
    Result040 {
        cni_version: to,
        interfaces: Vec::new(),
        ips,
        routes,
        dns: r.dns,
    }
}

/// 0.3.x/0.4.0 down to 0.1.0/0.2.0.
fn v040_to_v020(r: Result040, to: SpecVersion) -> Result<Result020, ConvertError> {
    let ips = r.ips.iter().map(|ip| (ip.family(), ip.address, ip.gateway));
    down_to_v020(ips, r.routes, r.dns, to)
}

/// 1.x down to 0.1.0/0.2.0: what going through 0.4.0 gives (each address
/// takes its family from itself), without building the 0.4.0 result.
fn v100_to_v020(r: Result100, to: SpecVersion) -> Result<Result020, ConvertError> {
    let ips = r
        .ips
        .iter()
        .map(|ip| (ip.address.family(), ip.address, ip.gateway));
    down_to_v020(ips, r.routes, r.dns, to)
}

/// The 0.1.0/0.2.0 result of a newer one's addresses (with their family),
/// routes and DNS: the first address of each family becomes `ip4`/`ip6`,
/// and each route goes under the address of its destination's family.
fn down_to_v020(
    ips: impl Iterator<Item = (IpFamily, IpNetwork, Option<IpAddr>)>,
    routes: Vec<Route>,
    dns: Dns,
    to: SpecVersion,
) -> Result<Result020, ConvertError> {
    let (mut ip4, mut ip6) = (None, None);
    for (family, ip, gateway) in ips {
        let slot = match family {
            IpFamily::V4 => &mut ip4,
            IpFamily::V6 => &mut ip6,
        };
        if slot.is_none() {
            *slot = Some(IpConfig020 {
                ip,
                gateway,
                routes: Vec::new(),
            });
        }
    }
    for route in routes {
        let target = if is_ipv4(route.dst.addr()) {
            &mut ip4
        } else {
            &mut ip6
        };
        if let Some(ip) = target {
            ip.routes.push(route.without_1_1_fields());
        }
    }
    if ip4.is_none() && ip6.is_none() {
        return Err(ConvertError::NoAddresses);
    }
    Ok(Result020 {
        cni_version: to,
        ip4,
        ip6,
        dns,
    })
}

/// 0.3.x/0.4.0 up to 1.x: the family tag is dropped. Route fields of 1.1.0
/// that the 0.x result carries (Go plugins on newer libraries print them in
/// 0.4.0 results, the reference's route type being shared) are kept whole,
/// at 1.0.0 too, as the reference's `convertFrom04x` copies each route.
fn v040_to_v100(r: Result040, to: SpecVersion) -> Result100 {
    Result100 {
        interfaces: r.interfaces,
        ips: r
            .ips
            .into_iter()
            .map(|ip| IpConfig {
                interface: ip.interface,
                address: ip.address,
                gateway: ip.gateway,
            })
            .collect(),
        routes: r.routes,
        dns: r.dns,
        cni_version: to,
    }
}

/// 1.x down to 0.3.x/0.4.0: each address is tagged with its family.
fn v100_to_v040(r: Result100, to: SpecVersion) -> Result040 {
    Result040 {
        cni_version: to,
        interfaces: r
            .interfaces
            .into_iter()
            .map(Interface::without_1_1_fields)
            .collect(),
        ips: r
            .ips
            .into_iter()
            .map(|ip| IpConfig040 {
                version: Some(ip.address.family()),
                interface: ip.interface,
                address: ip.address,
                gateway: ip.gateway,
            })
            .collect(),
        routes: without_1_1_routes(r.routes),
        dns: r.dns,
    }
}
