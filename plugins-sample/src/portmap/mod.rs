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
mod host;
pub mod iptables;
pub mod mapper;
pub mod nftables;

use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Code, Error, IpNetwork, NetConf, ValidAttachments};

use config::{Fields, Setup, CHECK_NOT_CHAINED, NOT_CHAINED};
use mapper::{mapped, IptablesMapper, MapError};

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI portmap plugin (cni-rs) v0.1.0";

/// The plugin. The backend comes from the configuration, else from the
/// reference's rule ([`cni_netfilter::iptables_first`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct Portmap;

type Req<'a> = Request<'a, NetConf<Fields>>;

impl Plugin for Portmap {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let forwarded = mapped(req, |setup, mapper| {
            req.config.prev_result_or(NOT_CHAINED)?;
            if setup.mappings.is_empty() {
                return Ok(());
            }
            for (i, container) in setup.addresses().enumerate() {
                match mapper.forward(setup, &req.container_id, container) {
                    // Only before anything changed may nftables take over.
                    Err(error) if i == 0 && cni_netfilter::cannot_list(&error) => {
                        let other_family = Ok(());
                        return Err(MapError::Unlisted {
                            error,
                            other_family,
                        });
                    }
                    other => other.map_err(setup_failed)?,
                }
                host::after_forward(setup, req, container)?;
            }
            Ok(())
        });
        match forwarded {
            Ok(()) => {}
            Err(MapError::Unlisted { error, .. }) => return Err(setup_failed(error).into()),
            Err(MapError::NotForIptables(e) | MapError::Failed(e)) => return Err(e.into()),
        }
        let prev = req.config.prev_result_or(NOT_CHAINED)?.clone();
        Ok(prev.into())
    }

    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let removed = mapped(req, |setup, mapper| {
            if setup.mappings.is_empty() {
                return Ok(());
            }
            mapper.unforward(setup, &req.container_id)
        });
        match removed {
            Ok(()) => Ok(()),
            // iptables cannot list its IPv4 table and nftables is not the
            // host's: an error only when ip6tables cannot either.
            Err(MapError::Unlisted {
                other_family: Ok(()),
                ..
            }) => Ok(()),
            Err(MapError::Unlisted {
                error,
                other_family: Err(v6),
            }) => Err(
                Error::new(Code::INTERNAL, "neither iptables nor ip6tables is usable")
                    .with_details(format!("{error}; {v6}"))
                    .into(),
            ),
            Err(MapError::NotForIptables(e) | MapError::Failed(e)) => Err(e.into()),
        }
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let checked = mapped(req, |setup, mapper| {
            req.config.prev_result_or(CHECK_NOT_CHAINED)?;
            if setup.mappings.is_empty() {
                return Ok(());
            }
            for (i, container) in setup.addresses().enumerate() {
                match mapper.check(setup, &req.container_id, container) {
                    Ok(()) => {}
                    Err(error) if i == 0 && cni_netfilter::cannot_list(&error) => {
                        let other_family = Ok(());
                        return Err(MapError::Unlisted {
                            error,
                            other_family,
                        });
                    }
                    // Code 999, as the reference's "could not check ...".
                    Err(e) => {
                        let mut err = Error::from(e);
                        err.msg =
                            format!("could not check {}: {}", family_name(container), err.msg);
                        return Err(err.into());
                    }
                }
            }
            Ok(())
        });
        match checked {
            Ok(()) => Ok(()),
            Err(MapError::Unlisted { error, .. }) => Err(Error::from(error).into()),
            Err(MapError::NotForIptables(e) | MapError::Failed(e)) => Err(e.into()),
        }
    }

    /// GC collects the iptables layout whatever the configured backend:
    /// the rules may come from another configuration or version. The
    /// nftables layout cannot say whose network a rule is (see the module
    /// docs): of it, only the records of containers `valid` does not keep
    /// go ([`nftables::forget_stale_records`]).
    fn gc(&self, req: &Req) -> Result<(), BoxError> {
        let valid = req.valid_attachments()?;
        if valid == ValidAttachments::Unspecified {
            return Ok(());
        }
        // Read for its errors too: a configuration ADD would refuse is
        // refused.
        let setup = Setup::read(&req.config, &req.ifname, cni_netfilter::choose)?;
        nftables::forget_stale_records(&setup.network, |id| valid.keeps_container(id));
        IptablesMapper::default().gc(&setup.network, &valid)?;
        Ok(())
    }
}

fn setup_failed(e: cni_netfilter::FilterError) -> Error {
    let mut err = Error::from(e);
    err.msg = format!("unable to set up port mappings: {}", err.msg);
    err
}

fn family_name(container: IpNetwork) -> &'static str {
    if container.is_ipv4() {
        "ipv4 dnat"
    } else {
        "ipv6 dnat"
    }
}

#[cfg(test)]
mod tests;
