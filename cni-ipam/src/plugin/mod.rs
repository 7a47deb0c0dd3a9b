//! The IPAM plugin: ADD, DEL, CHECK, GC and STATUS over any [`Store`].
//!
//! - **ADD** reserves one address per range set and returns them with their
//!   gateways, the configured `routes`, and the DNS of `resolvConf` when
//!   given (host-local's only DNS source), in the configuration's version.
//!   An attachment `(CNI_CONTAINERID, CNI_IFNAME)` that already holds an
//!   address is refused with [`DUPLICATE_ALLOCATION`](crate::DUPLICATE_ALLOCATION),
//!   as host-local refuses it, and keeps what it holds. Addresses can be requested through `args.cni.ips`
//!   or `runtimeConfig.ips`, else `CNI_ARGS` `IP=`; see
//!   [`crate::config::requested_ips`].
//! - **DEL** releases the attachment's reservations; nothing held is fine.
//!   An entry of the store that cannot be read (it may be the attachment's)
//!   fails it with code 5 naming the entry, releasing nothing, so that the
//!   runtime retries.
//! - **CHECK** fails with [`NOT_RESERVED`] unless the attachment holds an
//!   address in every range set.
//! - **GC** releases the reservations of attachments that are not valid
//!   ([`crate::gc`]); without `cni.dev/valid-attachments` it releases
//!   nothing and says so on stderr.
//! - **STATUS** answers code 50 while a range set has no free address (ADD
//!   would fail) or the store cannot be read, naming it.
//!
//! Entries of the store that are not what their names say are named on
//! stderr and skipped.

mod reserve;
#[cfg(test)]
mod tests;

use std::marker::PhantomData;
use std::net::IpAddr;

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{
    Attachment, Code, Dns, Error, IpConfig, IpNetwork, NetConf, Result100, SpecVersion,
};

use crate::config::{self, IpamConfig};
use crate::plan;
use crate::store::{Access, Reservation, State, Store};
use crate::{dns, gc, NOT_RESERVED};

/// An IPAM plugin keeping its reservations in a store of type `S`.
///
/// ```no_run
/// #![no_main]
/// use cni_ipam::{store::file::FileStore, Ipam};
///
/// cni_skel::plugin_main!(
///     Ipam::<FileStore>::new("ipam-file"),
///     cni_version::PluginInfo::all(),
///     "CNI ipam-file plugin v0.1.0"
/// );
/// ```
pub struct Ipam<S> {
    name: &'static str,
    store: PhantomData<fn() -> S>,
}

impl<S> Ipam<S> {
    /// The plugin; `name` prefixes what it writes on stderr.
    pub const fn new(name: &'static str) -> Ipam<S> {
        Ipam {
            name,
            store: PhantomData,
        }
    }
}

impl<S> std::fmt::Debug for Ipam<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ipam").field("name", &self.name).finish()
    }
}

impl<S: Store> Ipam<S> {
    /// Reads the store, naming what it skipped on stderr.
    fn read(&self, req: &Request<NetConf>, store: &mut S, sets: usize) -> Result<State, Error> {
        let state = store.read(sets)?;
        for skipped in &state.skipped {
            req.log(format!("{}: {skipped}", self.name));
        }
        Ok(state)
    }
}

/// The `ipam` section and the store's keys of the request, validated.
fn configs<S: Store>(req: &Request<NetConf>) -> Result<(IpamConfig, S::Config), Error> {
    let cfg = IpamConfig::from_conf(&req.config)?;
    let store = S::config(IpamConfig::section(&req.config)?)?;
    Ok((cfg, store))
}

/// The attachment a request is for.
fn attachment(req: &Request<NetConf>) -> Attachment {
    Attachment {
        container_id: req.container_id.clone(),
        ifname: req.ifname.clone(),
    }
}

/// The addresses of the request's `prevResult` in the network's range
/// sets: where the attachment's reservations are, as the runtime
/// remembers the ADD's result (empty without one, or one that cannot be
/// read as a current result).
fn expected_addresses(req: &Request<NetConf>, cfg: &IpamConfig) -> Vec<IpAddr> {
    let Some(Ok(prev)) = req.config.prev_result.as_ref().map(|p| p.as_current()) else {
        return Vec::new();
    };
    (prev.ips.iter())
        .map(|ip| ip.address.addr())
        .filter(|ip| cfg.range_sets.iter().any(|set| set.contains(*ip)))
        .collect()
}

impl<S: Store> Plugin for Ipam<S> {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let (cfg, store_cfg) = configs::<S>(req)?;
        let requested = config::requested_ips(&req.config, &req.args)?;
        let dns = match &cfg.resolv_conf {
            Some(path) => dns::read_resolv_conf(path)?,
            None => Dns::default(),
        };
        let attachment = attachment(req);
        let mut store = S::open(&cfg.name, &store_cfg, Access::Create)?
            .ok_or_else(|| Error::new(Code::INTERNAL, "store not created"))?;
        store.use_ranges(&cfg.range_sets)?;
        let state = self.read(req, &mut store, cfg.range_sets.len())?;
        plan::refuse_duplicate(&cfg, &state, &attachment)?;
        let plan = reserve::reserve(&mut store, &cfg, state, &attachment, &requested)?;
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

    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let (cfg, store_cfg) = configs::<S>(req)?;
        let Some(mut store) = S::open(&cfg.name, &store_cfg, Access::Change)? else {
            return Ok(());
        };
        store.use_ranges(&cfg.range_sets)?;
        store.expect(&expected_addresses(req, &cfg));
        let state = self.read(req, &mut store, cfg.range_sets.len())?;
        if let Some(unreadable) = state.unreadable.first() {
            // It may be this attachment's: succeeding would leave it held
            // for good. Failing makes the runtime retry the DEL.
            return Err(Error::new(
                Code::IO_FAILURE,
                format!(
                    "cannot read {}, which may be this attachment's reservation",
                    unreadable.entry
                ),
            )
            .with_details(format!("{}; nothing was released", unreadable.why))
            .into());
        }
        let mut mine: Vec<&Reservation> = state
            .held
            .iter()
            .filter(|r| r.held_by(&attachment(req)))
            .collect();
        if mine.is_empty() {
            // As host-local: reservations from before the interface name
            // was recorded belong to the container.
            mine = state
                .held
                .iter()
                .filter(|r| r.held_by_legacy(&req.container_id))
                .collect();
        }
        if !mine.is_empty() {
            store.release(&mine)?;
        }
        Ok(())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let (cfg, store_cfg) = configs::<S>(req)?;
        let attachment = attachment(req);
        let (held, place) = match S::open(&cfg.name, &store_cfg, Access::Read)? {
            Some(mut store) => (
                {
                    store.use_ranges(&cfg.range_sets)?;
                    store.expect(&expected_addresses(req, &cfg));
                    self.read(req, &mut store, cfg.range_sets.len())?.held
                },
                store.describe(),
            ),
            None => (Vec::new(), "the store".to_owned()),
        };
        let mine: Vec<&Reservation> = held.iter().filter(|r| r.belongs_to(&attachment)).collect();
        for set in &cfg.range_sets {
            if !mine.iter().any(|r| set.contains(r.ip)) {
                return Err(Error::new(
                    NOT_RESERVED,
                    format!(
                        "no address reserved for container {:?}, interface {:?} in range set {} ({set})",
                        req.container_id, req.ifname, set.field
                    ),
                )
                .with_details(format!(
                    "{place} holds {}",
                    if mine.is_empty() {
                        "nothing for it".to_owned()
                    } else {
                        mine.iter().map(|r| r.ip.to_string()).collect::<Vec<_>>().join(", ")
                    }
                ))
                .into());
            }
        }
        Ok(())
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let (cfg, store_cfg) = configs::<S>(req)?;
        let valid = req.valid_attachments()?;
        if valid.is_unspecified() {
            req.log(format!(
                "{}: GC without cni.dev/valid-attachments: the runtime did not say which \
                 attachments are in use, so nothing is released",
                self.name
            ));
            return Ok(());
        }
        let Some(mut store) = S::open(&cfg.name, &store_cfg, Access::Change)? else {
            return Ok(());
        };
        store.use_ranges(&cfg.range_sets)?;
        let state = self.read(req, &mut store, cfg.range_sets.len())?;
        // Called even with nothing stale: a store with blocks (etcd) gives
        // back the node's empty ones.
        store.release(&gc::stale(&state.held, &valid))?;
        Ok(())
    }

    fn status(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let (cfg, store_cfg) = configs::<S>(req)?;
        let found = S::open(&cfg.name, &store_cfg, Access::Read).and_then(|store| match store {
            Some(mut store) => Ok(Some((
                {
                    store.use_ranges(&cfg.range_sets)?;
                    store.exhausted_sets(&cfg.range_sets)?
                },
                store.describe(),
            ))),
            None => Ok(None),
        });
        let (full, place) = match found {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(()),
            Err(e) => {
                return Err(Error::new(
                    Code::PLUGIN_NOT_AVAILABLE,
                    format!("cannot read the reservations: {}", e.msg),
                )
                .with_details(e.details)
                .into())
            }
        };
        if full.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = full
            .iter()
            .map(|&i| format!("{} ({})", cfg.range_sets[i].field, cfg.range_sets[i]))
            .collect();
        Err(Error::new(
            Code::PLUGIN_NOT_AVAILABLE,
            format!("no free address in range set {}", names.join(", ")),
        )
        .with_details(format!("every address of it is reserved in {place}"))
        .into())
    }
}
