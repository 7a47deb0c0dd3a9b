//! `portmap`: a drop-in for the reference `portmap`, the chained plugin
//! that forwards host ports to a container (the `portMappings`
//! capability).
//!
//! ```json
//! {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}
//! ```
//! with `runtimeConfig.portMappings` such as
//! `[{"hostPort": 8080, "containerPort": 80, "protocol": "tcp", "hostIP": "192.168.1.1"}]`.
//!
//! - `config.rs`: every field of the reference (`backend`, `snat`,
//!   `masqAll`, `markMasqBit`, `externalSetMarkChain`, `conditionsV4`,
//!   `conditionsV6`, the mappings), checked before anything changes, and
//!   the container addresses from `prevResult` as the reference picks them;
//! - `conditions.rs`: the conditions read into matches;
//! - `iptables.rs`, `nftables.rs`: the reference's two layouts, as
//!   cni-netfilter transactions; each plugin's DEL removes the other's
//!   rules;
//! - here: the commands, `route_localnet` and stale UDP conntrack entries.
//!
//! ADD applies each container address's rules (IPv4 first) in one
//! transaction, removes conntrack entries of UDP flows to the mapped host
//! ports (which would bypass the new DNAT), and with `snat` sets
//! `route_localnet` on the host interface routing to the container, so
//! the host reaches `127.0.0.1:hostPort`. DEL removes the container's
//! rules in both families. CHECK looks for them. GC removes the iptables rules of
//! attachments the runtime no longer lists.
//!
//! # Where we deliberately differ from the reference
//! - Conditions are read, not pasted into the rules: the common matches
//!   only, anything else refused with code 7 naming the condition
//!   (`conditions.rs`).
//!   An iptables condition naming an interface that ends with `+`
//!   (iptables' wildcard: `-i cni+` is every `cni*` link) is refused too:
//!   the rules name one interface each, and `-i +` would be listed back
//!   without `-i`, never to be found again.
//! - Bad input is refused before any change, naming the field, code 7:
//!   ports outside 1..=65535, a protocol other than tcp, udp or sctp (any
//!   case), a `hostIP` that is not an address, more than
//!   [`config::MAX_MAPPINGS`] mappings, `markMasqBit` outside 0..=31. The
//!   reference finds some of these only when iptables refuses a rule, after
//!   others were added.
//! - CHECK checks only the families the container has addresses of;
//!   Debian's reference 1.1.1 fails an IPv4-only pod ("could not check
//!   ipv6 dnat").
//! - GC, which the reference lacks, collects the iptables layout whatever
//!   the configured backend (nothing when `cni.dev/valid-attachments` is
//!   absent; `null` is the empty list): the entry rules' comments name
//!   network and container, so the rules of this network's containers
//!   that the list does not name are removed. Under nftables a rule's
//!   comment is only the container ID, the same for every network a
//!   container is on, and a runtime lists only this network's
//!   attachments: CRI-O's GC at start sends `null` for a network without
//!   a live pod, which would remove the mappings of every pod on every
//!   other network. So GC removes no nftables mapping; DEL does.
//! - masqAll under nftables masquerades from every source, as upstream
//!   after v1.9.1 does (v1.9.1 ignored it there).
//! - The host interface for `route_localnet` is the one of the longest
//!   matching route of the main table to the container address (the
//!   reference asks the kernel's route lookup, which also weighs rules and
//!   other tables).
//!
//! Go: plugins `plugins/meta/portmap` (v1.9.1).

pub mod conditions;
pub mod config;
pub mod iptables;
pub mod nftables;

use std::net::IpAddr;

use cni_netfilter::iptables::IptablesBackend;
use cni_netfilter::nft::NftBackend;
use cni_netfilter::{Backend, BackendKind, Family, Protocol};
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Code, Error, IpNetwork, NetConf, ValidAttachments};

use config::{not_chained, Fields, Setup};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI portmap plugin (cni-rs) v0.1.0";

/// The plugin. The backend comes from the configuration, else from
/// [`cni_netfilter::choose`]'s probe of the host.
#[derive(Debug, Default, Clone, Copy)]
pub struct Portmap;

impl Portmap {
    fn setup(req: &Request<NetConf<Fields>>) -> Result<Setup, Error> {
        Setup::read(&req.config, &req.ifname, cni_netfilter::choose)
    }

    /// ADD's and DEL's setup: with no `backend` configured, iptables
    /// without running the probe first (one `iptables` process of the
    /// three an ADD ran, bench/process/kind.sh); `true` when the probe
    /// was left out, so the caller asks it once iptables fails to list
    /// ([`Portmap::nftables_instead`]). A configuration that only
    /// nftables takes is read with the probe, as before.
    fn setup_unprobed(req: &Request<NetConf<Fields>>) -> Result<(Setup, bool), Error> {
        if req.config.plugin.backend.is_some() {
            return Ok((Self::setup(req)?, false));
        }
        match Setup::read(&req.config, &req.ifname, |_| BackendKind::Iptables) {
            Ok(setup) => Ok((setup, true)),
            Err(_) => Ok((Self::setup(req)?, false)),
        }
    }

    /// The setup with nftables when the probe, asked late, picks it
    /// (iptables unusable, nftables usable): what
    /// [`cni_netfilter::choose`] would have chosen up front.
    fn nftables_instead(req: &Request<NetConf<Fields>>) -> Option<Setup> {
        if cni_netfilter::choose(None) != BackendKind::Nftables {
            return None;
        }
        Setup::read(&req.config, &req.ifname, |_| BackendKind::Nftables).ok()
    }
}

use cni_netfilter::cannot_list;

impl Plugin for Portmap {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let (setup, unprobed) = Self::setup_unprobed(req)?;
        let prev = req.config.prev_result.clone().ok_or_else(not_chained)?;
        if setup.mappings.is_empty() {
            return Ok(prev.into());
        }
        if let Some(unlisted) = forward(&setup, req, unprobed)? {
            let nftables = Self::nftables_instead(req).ok_or_else(|| setup_failed(unlisted))?;
            forward(&nftables, req, false)?;
        }
        Ok(prev.into())
    }

    fn del(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let (setup, unprobed) = Self::setup_unprobed(req)?;
        if setup.mappings.is_empty() {
            return Ok(());
        }
        let mut instead = || match unprobed {
            true => Self::nftables_instead(req),
            false => None,
        };
        unforward(&setup, &req.container_id, &mut instead)?;
        Ok(())
    }

    fn check(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let setup = Self::setup(req)?;
        if req.config.prev_result.is_none() {
            return Err(Error::invalid_config("prevResult", "required by CHECK, missing").into());
        }
        if setup.mappings.is_empty() {
            return Ok(());
        }
        for container in setup.addresses() {
            let found = match setup.backend {
                BackendKind::Iptables => iptables::check(
                    &mut IptablesBackend::new(),
                    &setup,
                    &req.container_id,
                    container,
                ),
                BackendKind::Nftables => nftables::check(
                    &mut NftBackend::open().map_err(Error::from)?,
                    &setup,
                    &req.container_id,
                    container,
                ),
            }
            .map_err(Error::from)?;
            found.map_err(|why| {
                Error::new(
                    Code::INTERNAL,
                    format!("could not check {}: {why}", family_name(container)),
                )
            })?;
        }
        Ok(())
    }

    fn gc(&self, req: &Request<Self::Config>) -> Result<(), BoxError> {
        let valid = req.valid_attachments()?;
        if valid == ValidAttachments::Unspecified {
            return Ok(());
        }
        // Read for its errors too: a configuration ADD would refuse is
        // refused.
        let setup = Self::setup(req)?;
        // The iptables layout whatever the configured backend: the rules
        // may come from another configuration or version. The nftables
        // layout cannot say whose network a rule is (see the module docs).
        let mut failures = Vec::new();
        let mut backend = IptablesBackend::new();
        for ipv6 in [false, true] {
            let ids = match iptables::containers(&mut backend, &setup.network, ipv6) {
                Ok(ids) => ids,
                // A family whose iptables does not work holds nothing.
                Err(_) if iptables::usable(&mut backend, ipv6).is_err() => continue,
                Err(e) => {
                    failures.push(format!("iptables: {e}"));
                    continue;
                }
            };
            for id in ids.iter().filter(|id| !valid.keeps_container(id)) {
                match iptables::unforward(&mut backend, &setup.network, id, ipv6) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) | Err(e) => failures.push(format!("{id}: {e}")),
                }
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(Error::new(
                Code::INTERNAL,
                "failed to remove the port mappings of stale attachments",
            )
            .with_details(failures.join("; "))
            .into())
        }
    }
}

/// ADD's work for each container address: the rules, stale UDP flows,
/// `route_localnet`. `Ok(Some(e))` when `unprobed` and iptables could
/// not list the first table, before anything changed.
fn forward(
    setup: &Setup,
    req: &Request<NetConf<Fields>>,
    unprobed: bool,
) -> Result<Option<cni_netfilter::FilterError>, Error> {
    let mut backend = match setup.backend {
        BackendKind::Iptables => Forwarder::Iptables(IptablesBackend::new()),
        BackendKind::Nftables => Forwarder::Nftables(NftBackend::open().map_err(Error::from)?),
    };
    for (i, container) in setup.addresses().enumerate() {
        let ipv6 = !container.is_ipv4();
        let applied = match &mut backend {
            Forwarder::Iptables(ipt) => {
                ipt.apply(&iptables::forward(setup, &req.container_id, container))
            }
            Forwarder::Nftables(nft) => {
                nftables::forward_on(nft, setup, &req.container_id, container)
            }
        };
        match applied {
            Err(e) if unprobed && i == 0 && cannot_list(&e) => return Ok(Some(e)),
            other => other.map_err(setup_failed)?,
        }
        // After the rules, so new flows take them. Informative only, as
        // in the reference.
        if let Err(e) = delete_stale_udp(setup, ipv6) {
            req.log(format_args!(
                "portmap: failed to delete stale UDP conntrack entries for {}: {e}",
                container.addr()
            ));
        }
        if setup.snat && !ipv6 {
            enable_route_localnet(container.addr())?;
        }
    }
    Ok(None)
}

fn setup_failed(e: cni_netfilter::FilterError) -> Error {
    let mut err = Error::from(e);
    err.msg = format!("unable to set up port mappings: {}", err.msg);
    err
}

/// The backend ADD forwards with.
enum Forwarder {
    Iptables(IptablesBackend),
    Nftables(NftBackend),
}

fn family_name(container: IpNetwork) -> &'static str {
    if container.is_ipv4() {
        "ipv4 dnat"
    } else {
        "ipv6 dnat"
    }
}

/// DEL's teardown: nftables in both families; iptables in each family
/// whose iptables works, an error only when neither does. When iptables
/// could not list the IPv4 table, the setup `instead` gives (nftables, as
/// the late probe chose it) is torn down in its place.
///
/// Under iptables the two families are torn down at the same time, in
/// two threads (the DEL's wall time is the slower family's, not the
/// sum): so the IPv6 teardown has already run when the IPv4 one fails,
/// where the sequential loop stopped before it. Removing this container's
/// own chains is what DEL asked for, so that is kept.
///
/// Go: `unforwardPorts` of each backend.
fn unforward(
    setup: &Setup,
    container_id: &str,
    instead: &mut dyn FnMut() -> Option<Setup>,
) -> Result<(), Error> {
    match setup.backend {
        BackendKind::Nftables => {
            let mut nft = NftBackend::open().map_err(Error::from)?;
            nftables::unforward(&mut nft, container_id).map_err(|e| {
                let mut err = Error::from(e);
                err.msg = format!("error deleting nftables rules: {}", err.msg);
                err
            })
        }
        BackendKind::Iptables => {
            // Both families at once, each its own save and restore (and
            // its own lock, `host_lock_of`): DEL waits for the slower
            // family, not for the sum. The results are read in the order
            // the sequential teardown had, IPv4 first.
            let [v4, v6] = std::thread::scope(|scope| {
                let v6 = scope.spawn(|| {
                    iptables::unforward(
                        &mut IptablesBackend::new(),
                        &setup.network,
                        container_id,
                        true,
                    )
                });
                let v4 = iptables::unforward(
                    &mut IptablesBackend::new(),
                    &setup.network,
                    container_id,
                    false,
                );
                [
                    v4,
                    v6.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                ]
            });
            let mut unusable = Vec::new();
            for (ipv6, torn) in [(false, v4), (true, v6)] {
                let torn = torn.map_err(|e| {
                    let mut err = Error::from(e);
                    let family = if ipv6 { "ipv6" } else { "ipv4" };
                    err.msg = format!("could not teardown {family} dnat: {}", err.msg);
                    err
                })?;
                if let Err(e) = torn {
                    if !ipv6 {
                        if let Some(other) = instead() {
                            return unforward(&other, container_id, &mut || None);
                        }
                    }
                    unusable.push(e.to_string());
                }
            }
            if unusable.len() == 2 {
                return Err(
                    Error::new(Code::INTERNAL, "neither iptables nor ip6tables is usable")
                        .with_details(unusable.join("; ")),
                );
            }
            Ok(())
        }
    }
}

/// Removes the conntrack entries of UDP flows to the mapped host ports in
/// a family.
///
/// Go: `deletePortmapStaleConnections`.
fn delete_stale_udp(setup: &Setup, ipv6: bool) -> Result<(), cni_netfilter::FilterError> {
    let family = if ipv6 { Family::Ip6 } else { Family::Ip };
    for m in setup
        .mappings
        .iter()
        .filter(|m| m.protocol == Protocol::Udp)
    {
        cni_netfilter::conntrack::delete_by_destination_port(family, Protocol::Udp, m.host_port)?;
    }
    Ok(())
}

/// Sets `route_localnet` on the host interface that routes to the
/// container, so 127.0.0.0/8 sources may cross to it (the host reaching
/// `127.0.0.1:hostPort`). Nothing when no route leads there.
///
/// Go: `getRoutableHostIF` and `enableLocalnetRouting`.
fn enable_route_localnet(container: IpAddr) -> Result<(), Error> {
    let failed = |e: cni_net::NetError| {
        Error::new(Code::INTERNAL, "unable to enable route_localnet").with_details(e.to_string())
    };
    let Some(ifname) = routable_host_interface(container) else {
        return Ok(());
    };
    let name = cni_net::sysctl_for_ifname("net.ipv4.conf.IFNAME.route_localnet", &ifname)
        .map_err(failed)?;
    // Written from this thread, which is in the host's namespace: a
    // thread that joins it first (`Netns::set_sysctl`) cost a few
    // milliseconds of an ADD of about ten (bench/process/kind.sh).
    let path = cni_net::sysctl_path(&name).map_err(failed)?;
    std::fs::write(&path, "1").map_err(|e| {
        Error::new(Code::INTERNAL, "unable to enable route_localnet")
            .with_details(format!("{}: {e}", path.display()))
    })
}

/// The interface of the longest matching main-table route to `ip`.
fn routable_host_interface(ip: IpAddr) -> Option<String> {
    let mut netlink = cni_net::Netlink::open().ok()?;
    let routes = netlink.routes().ok()?;
    let best = routes
        .iter()
        .filter(|r| r.route.table.is_none_or(|t| t == cni_net::MAIN_TABLE))
        .filter(|r| r.route.dst.contains(ip))
        .filter_map(|r| Some((r.route.dst.prefix(), r.oif?)))
        .max_by_key(|(prefix, _)| *prefix)?;
    netlink.link(best.1).ok().map(|link| link.name)
}

#[cfg(test)]
mod tests;
