//! `ipam-file`: an IPAM plugin compatible with the reference `host-local`,
//! configuration and data directory alike, so an operator can swap one for
//! the other on a live node.
//!
//! ```json
//! {"cniVersion": "1.1.0", "name": "net1", "type": "bridge",
//!  "ipam": {"type": "ipam-file", "dataDir": "/var/lib/cni/networks",
//!           "ranges": [[{"subnet": "10.1.2.0/24", "gateway": "10.1.2.1"}],
//!                      [{"subnet": "2001:db8:1::/64"}]],
//!           "routes": [{"dst": "0.0.0.0/0"}]}}
//! ```
//!
//! - **ADD** reserves one address per range set and returns them with their
//!   gateways, the configured `routes`, and the DNS of `resolvConf` when
//!   given (host-local's only DNS source), in the configuration's version.
//!   An attachment `(CNI_CONTAINERID, CNI_IFNAME)` that already holds an
//!   address gets it again. Addresses can be requested through `args.cni.ips`
//!   or `runtimeConfig.ips`, else `CNI_ARGS` `IP=`; see
//!   [`config::requested_ips`].
//! - **DEL** releases the attachment's reservations; nothing held is fine.
//! - **CHECK** fails with [`NOT_RESERVED`] unless the attachment holds an
//!   address in every range set.
//! - **GC** releases every reservation whose attachment is not in
//!   `cni.dev/valid-attachments`.
//! - **STATUS** answers code 50 while a range set has no free address (ADD
//!   would fail).
//!
//! The configuration is validated in full before the data directory is
//! touched ([`config`]); addresses are chosen in memory under the lock
//! ([`allocator`]) and only then written ([`store`]).
//!
//! # Where ipam-file departs from host-local
//! - A repeated ADD returns the address held; host-local fails it
//!   ("duplicate allocation is not allowed").
//! - `runtimeConfig.ipRanges` replaces the configured ranges; host-local
//!   allocates from both.
//! - `args.cni.ips` and `runtimeConfig.ips` override `CNI_ARGS` `IP`
//!   (CONVENTIONS.md); host-local uses all three. Unknown `CNI_ARGS` keys
//!   are ignored; host-local rejects them without `IgnoreUnknown=1`.
//! - A gateway outside its subnet and `rangeStart` after `rangeEnd` are
//!   configuration errors; host-local accepts them.
//! - A failed ADD leaves `last_reserved_ip` untouched; host-local may have
//!   advanced it for addresses it then released.
//! - Errors carry CNI codes (7 for configuration, 5 for I/O, 100.. below)
//!   where host-local answers 999 for all.

pub mod allocator;
pub mod config;
pub mod store;

use std::net::IpAddr;

use cni_skel::{BoxError, Plugin, Reply, Request};
use cni_types::{Code, Dns, Error, IpConfig, IpNetwork, NetConf, Result100, SpecVersion};

use config::IpamConfig;
use store::{LockMode, Store};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI ipam-file plugin v0.1.0 (host-local compatible)";

/// A requested address is reserved by another attachment, or the
/// attachment already holds a different one in that range set.
pub const ADDRESS_UNAVAILABLE: Code = Code(100);
/// A requested address is in no range, is a gateway, or shares a range set
/// with another requested address.
pub const ADDRESS_NOT_ALLOCATABLE: Code = Code(101);
/// ADD found no free address in a range set.
pub const RANGE_EXHAUSTED: Code = Code(102);
/// CHECK found no reservation for the attachment.
pub const NOT_RESERVED: Code = Code(103);

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct IpamFile;

impl Plugin for IpamFile {
    type Config = NetConf;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let requested = config::requested_ips(&req.config, &req.args)?;
        let dns = match &cfg.resolv_conf {
            Some(path) => read_resolv_conf(path)?,
            None => Dns::default(),
        };

        let store = Store::create(&cfg.network_dir())?;
        let held = store.reservations()?;
        let last: Vec<Option<IpAddr>> = (0..cfg.range_sets.len())
            .map(|i| store.last_reserved(i))
            .collect();
        let plan = allocator::plan(
            &cfg,
            &held,
            &last,
            &req.container_id,
            &req.ifname,
            &requested,
        )?;

        let mut written: Vec<IpAddr> = Vec::new();
        let outcome = (|| {
            for a in plan.iter().filter(|a| a.new) {
                if !store.reserve(a.ip, &req.container_id, &req.ifname)? {
                    // Impossible under the lock unless something ignores it.
                    return Err(Error::new(
                        ADDRESS_UNAVAILABLE,
                        format!("address {} was reserved concurrently", a.ip),
                    )
                    .with_details(format!("in {}", store.dir().display())));
                }
                written.push(a.ip);
                store.set_last_reserved(a.set, a.ip)?;
            }
            store.sync()
        })();
        if let Err(e) = outcome {
            for ip in &written {
                let _ = store.release(*ip);
            }
            let _ = store.sync();
            return Err(e.into());
        }
        drop(store);

        let mut result = Result100::new(SpecVersion::V1_1_0);
        for a in &plan {
            let address = IpNetwork::new(a.ip, a.prefix).ok_or_else(|| {
                Error::new(
                    Code::INTERNAL,
                    format!("bad prefix /{} for {}", a.prefix, a.ip),
                )
            })?;
            result.ips.push(IpConfig::new(address, Some(a.gateway)));
        }
        result.routes = cfg.routes;
        result.dns = dns;
        Ok(result.into())
    }

    fn del(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let Some(store) = Store::open_existing(&cfg.network_dir(), LockMode::Exclusive)? else {
            return Ok(Reply::Empty);
        };
        let held = store.reservations()?;
        let mut mine: Vec<IpAddr> = held
            .iter()
            .filter(|r| r.held_by(&req.container_id, &req.ifname))
            .map(|r| r.ip)
            .collect();
        if mine.is_empty() {
            // As host-local: reservations from before the interface name
            // was recorded belong to the container.
            mine = held
                .iter()
                .filter(|r| r.held_by_legacy(&req.container_id))
                .map(|r| r.ip)
                .collect();
        }
        if mine.is_empty() {
            return Ok(Reply::Empty);
        }
        for ip in mine {
            store.release(ip)?;
        }
        store.sync()?;
        Ok(Reply::Empty)
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let dir = cfg.network_dir();
        let held = match Store::open_existing(&dir, LockMode::Shared)? {
            Some(store) => store.reservations()?,
            None => Vec::new(),
        };
        let mine: Vec<IpAddr> = held
            .iter()
            .filter(|r| {
                r.held_by(&req.container_id, &req.ifname) || r.held_by_legacy(&req.container_id)
            })
            .map(|r| r.ip)
            .collect();
        for set in &cfg.range_sets {
            if !mine.iter().any(|ip| set.contains(*ip)) {
                return Err(Error::new(
                    NOT_RESERVED,
                    format!(
                        "no address reserved for container {:?}, interface {:?} in range set {} ({set})",
                        req.container_id, req.ifname, set.field
                    ),
                )
                .with_details(format!(
                    "{} holds {}",
                    dir.display(),
                    if mine.is_empty() {
                        "nothing for it".to_owned()
                    } else {
                        mine.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                    }
                ))
                .into());
            }
        }
        Ok(Reply::Empty)
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let valid = req.valid_attachments()?;
        let Some(store) = Store::open_existing(&cfg.network_dir(), LockMode::Exclusive)? else {
            return Ok(Reply::Empty);
        };
        let stale: Vec<IpAddr> = store
            .reservations()?
            .into_iter()
            .filter(|r| {
                !valid.iter().any(|a| {
                    r.held_by(&a.container_id, &a.ifname) || r.held_by_legacy(&a.container_id)
                })
            })
            .map(|r| r.ip)
            .collect();
        if stale.is_empty() {
            return Ok(Reply::Empty);
        }
        for ip in &stale {
            store.release(*ip)?;
        }
        store.sync()?;
        Ok(Reply::Empty)
    }

    fn status(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let cfg = IpamConfig::from_conf(&req.config)?;
        let held = match Store::open_existing(&cfg.network_dir(), LockMode::Shared)? {
            Some(store) => store.reservations()?,
            None => Vec::new(),
        };
        let full = allocator::exhausted_sets(&cfg, &held);
        if full.is_empty() {
            return Ok(Reply::Empty);
        }
        let names: Vec<String> = full
            .iter()
            .map(|&i| format!("{} ({})", cfg.range_sets[i].field, cfg.range_sets[i]))
            .collect();
        Err(Error::new(
            Code::PLUGIN_NOT_AVAILABLE,
            format!("no free address in range set {}", names.join(", ")),
        )
        .with_details(format!(
            "{} reservations in {}",
            held.len(),
            cfg.network_dir().display()
        ))
        .into())
    }
}

/// The DNS settings of a resolv.conf, read as host-local reads them:
/// `nameserver`, `domain`, `search` and `options` lines; comments (`#`,
/// `;`) and other lines skipped.
fn read_resolv_conf(path: &std::path::Path) -> Result<Dns, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::new(Code::IO_FAILURE, "cannot read ipam.resolvConf")
            .with_details(format!("{}: {e}", path.display()))
    })?;
    Ok(parse_resolv_conf(&text))
}

fn parse_resolv_conf(text: &str) -> Dns {
    let mut dns = Dns::default();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(key), rest) = (fields.next(), fields.collect::<Vec<_>>()) else {
            continue;
        };
        let Some(first) = rest.first() else {
            continue;
        };
        match key {
            "nameserver" => dns.nameservers.push((*first).to_owned()),
            "domain" => dns.domain = (*first).to_owned(),
            "search" => dns.search.extend(rest.iter().map(|s| (*s).to_owned())),
            "options" => dns.options.extend(rest.iter().map(|s| (*s).to_owned())),
            _ => {}
        }
    }
    dns
}
