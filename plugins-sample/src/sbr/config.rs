//! sbr's configuration, validated before anything changes.

use std::net::IpAddr;

use cni_types::Error;
use serde::Deserialize;

use super::Req;

/// The plugin's own configuration keys, as the reference names them.
#[derive(Debug, Default, Deserialize)]
pub struct Fields {
    /// A table of the operator's: only the rules `from ADDRESS lookup
    /// TABLE` are added, no routes. Absent: a new table per address,
    /// from 100 on, holding the interface's routes.
    #[serde(default)]
    pub table: Option<i64>,
    /// Gateways to use instead of `prevResult`'s, at most one per family.
    #[serde(default)]
    pub gateways: Option<Vec<String>>,
    /// Keep the subnet routes in the main table, each with its address as
    /// source hint, so traffic that names no source still finds its way.
    #[serde(rename = "addSourceHints", default)]
    pub add_source_hints: bool,
}

/// The validated configuration.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// `table`.
    pub table: Option<u32>,
    /// `gateways`' IPv4 one.
    pub gateway_v4: Option<IpAddr>,
    /// `gateways`' IPv6 one.
    pub gateway_v6: Option<IpAddr>,
    /// `addSourceHints`.
    pub add_source_hints: bool,
}

/// The name of the kernel's own tables (`rt_tables`: 253 `default`, 254
/// `main`, 255 `local`): rules sending a pod's addresses there would
/// route nothing apart, and DEL would remove rules that look up `main`.
fn reserved_table(table: u32) -> Option<&'static str> {
    match table {
        253 => Some("default"),
        254 => Some("main"),
        255 => Some("local"),
        _ => None,
    }
}

/// Validates the configuration: code 7 naming the field and value.
pub(super) fn plan(req: &Req) -> Result<Plan, Error> {
    let f = &req.config.plugin;
    let table = match f.table {
        None => None,
        Some(t) => Some(u32::try_from(t).ok().filter(|t| *t != 0).ok_or_else(|| {
            Error::invalid_config("table", format!("{t}: a routing table is 1 to 4294967295"))
        })?),
    };
    if let Some(name) = table.and_then(reserved_table) {
        return Err(Error::invalid_config(
            "table",
            format!(
                "{}: the kernel's {name} table, which every lookup shares, is not the pod's",
                f.table.unwrap_or_default()
            ),
        ));
    }
    let mut plan = Plan {
        table,
        add_source_hints: f.add_source_hints,
        ..Plan::default()
    };
    let gateways = f.gateways.as_deref().unwrap_or_default();
    if gateways.len() > 2 {
        return Err(Error::invalid_config(
            "gateways",
            "gateways list cannot contain more than 2 entries (one IPv4, one IPv6)",
        ));
    }
    for text in gateways {
        let ip: IpAddr = text.parse().map_err(|_| {
            Error::invalid_config(
                "gateways",
                format!("invalid static gateway IP address: {text:?}"),
            )
        })?;
        let slot = match ip {
            IpAddr::V4(_) => &mut plan.gateway_v4,
            IpAddr::V6(_) => &mut plan.gateway_v6,
        };
        if let Some(first) = slot {
            let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
            return Err(Error::invalid_config(
                "gateways",
                format!("gateways list contains multiple {family} addresses: {first} and {ip}"),
            ));
        }
        *slot = Some(ip);
    }
    Ok(plan)
}

impl Plan {
    /// The gateway configured for `ip`'s family.
    pub(super) fn gateway_for(&self, ip: IpAddr) -> Option<IpAddr> {
        match ip {
            IpAddr::V4(_) => self.gateway_v4,
            IpAddr::V6(_) => self.gateway_v6,
        }
    }
}
