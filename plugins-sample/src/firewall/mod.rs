//! `firewall`: a drop-in for the reference `firewall`, the chained plugin
//! that lets a container's traffic through the host's forwarding filter
//! and, with `ingressPolicy`, isolates its bridge from other bridges (and
//! its containers from each other).
//!
//! ```json
//! {"type": "firewall", "backend": "iptables", "ingressPolicy": "same-bridge"}
//! ```
//!
//! - `config.rs`: every field of the reference (`backend`,
//!   `iptablesAdminChainName`, `firewalldZone`, `ingressPolicy`), checked
//!   before anything changes, and what the previous result says (the
//!   addresses, the bridge as its first interface);
//! - [`cni_netfilter::firewall`]: the rules, under iptables exactly as the
//!   reference lays them out, or under nftables in a table of our own;
//! - here: the backend choice, and whether a bridge has no other
//!   container on it.
//!
//! ADD adds the rules under the chosen backend and passes the previous
//! result on. DEL removes the attachment's rules under both backends.
//! CHECK looks for them. GC removes the nftables rules of attachments the
//! runtime no longer lists, and the isolation rules of bridges that no
//! longer exist.
//!
//! # Where we deliberately differ from the reference
//! - `backend` may be `"nftables"` (ours: see
//!   [`cni_netfilter::firewall`]), and the default is nftables where
//!   iptables is unusable and nftables is ([`cni_netfilter::choose`]). A
//!   backend name that does not exist is refused (code 7, naming
//!   `backend`); the reference quietly uses its default.
//! - Bad input is refused before any change, naming the field, code 7: an
//!   `ingressPolicy` other than the three, an `iptablesAdminChainName`
//!   iptables would refuse or misread (or a built-in chain), a zone that
//!   is not printable ASCII, an isolating policy without a bridge in the
//!   previous result.
//! - Isolation rules do not outlive their bridge's containers. The
//!   reference never removes them, so a network that later reuses the
//!   bridge name (Podman does) silently inherits another network's
//!   policy. Here DEL removes a bridge's isolation rules when the bridge
//!   is gone, or when each of its ports is a host interface of this
//!   attachment's previous result (the firewall's DEL runs before the
//!   bridge's, so the container's port is still there). ADD does the same
//!   first for a bridge whose only port is its own, so stale rules go
//!   before this network's are added. GC removes the isolation rules of
//!   bridges that no longer exist. Two containers of a bridge deleted at
//!   the same moment may each see the other and leave the rules, as the
//!   reference always does.
//! - GC exists (the reference has none). The iptables rules name only an
//!   address, not its attachment, so ADD under iptables records the
//!   attachment's addresses (`records.rs`, under `dataDir`, ours, default
//!   `/var/lib/cni/firewall`), and GC removes the rules of recorded
//!   attachments the runtime no longer lists, but for addresses a listed
//!   attachment holds. Rules the reference added have no record: GC
//!   leaves them. nftables rules carry their attachment in their comment.
//! - DEL without a previous result still removes the attachment's rules:
//!   nftables ones by comment, iptables ones by the record. A record that
//!   cannot be read (damaged, truncated) is said on stderr and the
//!   previous result's addresses are used instead; only without a
//!   previous result does DEL then fail (code 5, the record kept), after
//!   removing everything else.
//! - An ADD under iptables whose record cannot be written removes the
//!   rules it added and fails: rules without a record no GC could find.
//! - The firewalld backend (`firewalld.rs`, over
//!   [`cni_netfilter::firewalld`]) is chosen, as in the reference, when
//!   asked for or when firewalld owns its bus name. Asked for while it is
//!   not running is an error (code 11, try again later) rather than calls
//!   failing one by one; a zone firewalld does not know is code 7 naming
//!   it. CHECK fails when an address is not in the zone (the reference
//!   only fails when the query does). DEL takes the addresses out of the
//!   zone when firewalld runs (its sources go with it when it stops), and
//!   still removes any iptables or nftables rules. GC leaves firewalld
//!   alone: a source names no attachment.
//! - An isolating `ingressPolicy` with `"backend": "firewalld"` is refused
//!   (code 7, naming `ingressPolicy`), and by default such a policy uses
//!   iptables or nftables even where firewalld runs: the reference adds
//!   its iptables isolation rules beside firewalld's zone, a mix this
//!   plugin does not make.
//!
//! Go: plugins `plugins/meta/firewall` (v1.9).

pub mod config;
pub mod firewalld;
pub mod records;
#[cfg(test)]
mod tests;

use cni_net::{LinkKind, NetError, Netlink};
use cni_netfilter::firewall::{self, Rules};
use cni_netfilter::firewalld::Firewalld;
use cni_netfilter::masquerade::Attachment;
use cni_netfilter::BackendKind;
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Error, NetConf, ValidAttachments};

use config::{Fields, Requested, Setup, NOT_CHAINED};
use records::Record;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI firewall plugin (cni-rs) v0.1.0";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Firewall;

/// The backend an invocation uses.
#[derive(Debug)]
enum Chosen {
    /// iptables or nftables: the one asked for, or `None` for the
    /// reference's default, iptables unless only nftables is usable, which
    /// ADD finds without probing first ([`cni_netfilter::iptables_first`]).
    Filter(Option<BackendKind>),
    /// firewalld, running on the system bus.
    Firewalld(Firewalld),
}

/// The configured backend, or the reference's default: firewalld when it
/// owns its bus name. An isolating `ingressPolicy` needs a packet filter
/// backend (its rules are iptables or nftables ones): with it, firewalld
/// asked for is refused before any change, and the default does not
/// probe for firewalld.
///
/// Go: plugins firewall `getBackend`.
fn choose(setup: &Setup) -> Result<Chosen, Error> {
    let isolates = setup.policy.isolates();
    match setup.requested {
        Requested::Filter(kind) => Ok(Chosen::Filter(Some(kind))),
        Requested::Firewalld if isolates => Err(Error::invalid_config(
            "ingressPolicy",
            format!(
                "{:?}: not supported with backend \"firewalld\" (use \"iptables\" or \"nftables\")",
                setup.policy.as_str()
            ),
        )),
        Requested::Firewalld => firewalld::required().map(Chosen::Firewalld),
        Requested::Default => Ok(match firewalld::probe().filter(|_| !isolates) {
            Some(fw) => Chosen::Firewalld(fw),
            None => Chosen::Filter(None),
        }),
    }
}

fn attachment<'a>(req: &'a Request<NetConf<Fields>>) -> Attachment<'a> {
    Attachment {
        network: &req.config.name,
        ifname: &req.ifname,
        container_id: &req.container_id,
    }
}

fn rules<'a>(req: &'a Request<NetConf<Fields>>, setup: &'a Setup) -> Rules<'a> {
    Rules {
        attachment: attachment(req),
        addresses: &setup.addresses,
        admin_chain: &setup.admin_chain,
        policy: setup.policy,
        bridge: setup.bridge.as_deref(),
    }
}

/// Whether no container but this attachment's is on `bridge`: it does
/// not exist, or it is a bridge whose ports are all among `ours`.
fn vacated(bridge: &str, ours: &[String]) -> Result<bool, NetError> {
    let mut nl = Netlink::open()?;
    let Some(link) = nl.find_link(bridge)? else {
        return Ok(true);
    };
    if link.kind != Some(LinkKind::Bridge) {
        return Ok(false);
    }
    Ok(!nl.has_port_besides(link.index, ours)?)
}

/// Removes the rules and records of the recorded attachments that `valid`
/// does not keep, but for addresses a kept attachment also holds.
fn collect_recorded(setup: &Setup, valid: &ValidAttachments) -> Result<(), Error> {
    let (kept, stale): (Vec<Record>, Vec<Record>) = setup
        .records
        .all()?
        .into_iter()
        .partition(|r| valid.keeps(&r.container_id, &r.ifname));
    for record in stale {
        let addresses: Vec<_> = record
            .addresses
            .iter()
            .filter(|a| !kept.iter().any(|k| k.addresses.contains(a)))
            .copied()
            .collect();
        let rules = Rules {
            attachment: Attachment {
                network: &setup.network,
                ifname: &record.ifname,
                container_id: &record.container_id,
            },
            addresses: &addresses,
            admin_chain: &setup.admin_chain,
            policy: setup.policy,
            bridge: None,
        };
        firewall::del(&rules, false).map_err(Error::from)?;
        setup.records.remove(&record.container_id, &record.ifname)?;
    }
    Ok(())
}

/// Whether the isolation rules of `bridge` are to go: it may have some
/// (a look at the isolation chains, before the dump of the node's links
/// that [`vacated`] is) and no container but ours is on it; false (keep
/// the rules) when the links cannot be read.
fn isolation_to_forget(req: &Request<NetConf<Fields>>, bridge: &str, ours: &[String]) -> bool {
    if !firewall::may_isolate(bridge) {
        return false;
    }
    vacated(bridge, ours).unwrap_or_else(|e| {
        req.log(format_args!(
            "firewall: keeping the isolation rules of {bridge}: {e}"
        ));
        false
    })
}

impl Plugin for Firewall {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let setup = Setup::read(&req.config)?;
        let prev = req.config.prev_result_or(NOT_CHAINED)?.clone();
        let kind = match choose(&setup)? {
            Chosen::Filter(kind) => kind,
            Chosen::Firewalld(fw) => {
                firewalld::add(&fw, &setup.zone, &setup.addresses)?;
                return Ok(prev.into());
            }
        };
        let rules = rules(req, &setup);
        if let Some(bridge) = rules.bridge {
            if isolation_to_forget(req, bridge, &setup.host_ports) {
                firewall::forget_bridge(bridge).map_err(Error::from)?;
            }
        }
        let kind = cni_netfilter::iptables_first(
            kind,
            || firewall::add(BackendKind::Iptables, &rules).map(|()| BackendKind::Iptables),
            || firewall::add(BackendKind::Nftables, &rules).map(|()| BackendKind::Nftables),
        )
        .map_err(Error::from)?;
        if kind == BackendKind::Iptables {
            let record = Record {
                container_id: req.container_id.clone(),
                ifname: req.ifname.clone(),
                addresses: setup.addresses.clone(),
            };
            if let Err(e) = setup.records.save(&record) {
                // Without its record no GC finds these rules: take them
                // back, so the failed ADD leaves nothing behind.
                if let Err(undo) = firewall::del(&rules, false) {
                    req.log(format_args!(
                        "firewall: failed to remove the rules of an ADD whose record failed: {undo}"
                    ));
                }
                return Err(e.into());
            }
        }
        Ok(prev.into())
    }

    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let mut setup = Setup::read(&req.config)?;
        let (recorded, damaged) = match setup.records.load(&req.container_id, &req.ifname) {
            Ok(recorded) => (recorded, None),
            Err(e) => {
                req.log(format_args!(
                    "firewall: {}: {}; removing the rules of the previous result's addresses",
                    e.msg, e.details
                ));
                (None, Some(e))
            }
        };
        // Without a previous result the record was all there was to go
        // by: everything else is removed, and the record stays, with the
        // error, for an operator to see which rules may be left.
        let damaged = damaged.filter(|_| req.config.prev_result.is_none());
        for address in recorded.into_iter().flat_map(|r| r.addresses) {
            if !setup.addresses.contains(&address) {
                setup.addresses.push(address);
            }
        }
        // Where ADD would have chosen firewalld (see `choose`), and it runs.
        if !matches!(setup.requested, Requested::Filter(_)) && !setup.policy.isolates() {
            if let Some(fw) = firewalld::probe() {
                firewalld::del(&fw, &setup.zone, &setup.addresses)?;
            }
        }
        let rules = rules(req, &setup);
        let last = rules
            .bridge
            .is_some_and(|bridge| isolation_to_forget(req, bridge, &setup.host_ports));
        firewall::del(&rules, last).map_err(Error::from)?;
        if let Some(e) = damaged {
            return Err(e.into());
        }
        setup.records.remove(&req.container_id, &req.ifname)?;
        Ok(())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let setup = Setup::read(&req.config)?;
        req.config.prev_result_or(NOT_CHAINED)?;
        match choose(&setup)? {
            Chosen::Filter(kind) => {
                firewall::check(cni_netfilter::choose(kind), &rules(req, &setup))
                    .map_err(Error::from)?
            }
            Chosen::Firewalld(fw) => firewalld::check(&fw, &setup.zone, &setup.addresses)?,
        }
        Ok(())
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let valid = req.valid_attachments()?;
        let setup = Setup::read(&req.config)?;
        if !valid.is_unspecified() {
            collect_recorded(&setup, &valid)?;
        }
        let mut nl = Netlink::open().map_err(Error::from)?;
        // A bridge whose lookup fails is taken as existing: its rules stay.
        let exists = |name: &str| !matches!(nl.find_link(name), Ok(None));
        let exists = std::cell::RefCell::new(exists);
        firewall::gc(&req.config.name, &valid, &|name| {
            (exists.borrow_mut())(name)
        })
        .map_err(Error::from)?;
        Ok(())
    }
}
