//! portmap's rules on one backend: one mapper per layout, the same
//! methods, chosen once per invocation (`mapped`, below).
//!
//! Go: plugins `portmap.PortMapper` and its `portMapperIPTables` and
//! `portMapperNFTables`.

use cni_netfilter::iptables::IptablesBackend;
use cni_netfilter::nft::NftBackend;
use cni_netfilter::{BackendKind, FilterError, ListingFailure};
use cni_types::{Code, Error, IpFamily, IpNetwork, ValidAttachments};

use super::config::Setup;
use super::{iptables, nftables, Req};

/// The rules of one layout.
pub trait Mapper {
    /// ADD for one container address: its rules.
    fn forward(
        &mut self,
        setup: &Setup,
        container_id: &str,
        container: IpNetwork,
    ) -> Result<(), FilterError>;

    /// CHECK for one container address: [`FilterError::Missing`] naming
    /// what is not there.
    fn check(
        &mut self,
        setup: &Setup,
        container_id: &str,
        container: IpNetwork,
    ) -> Result<(), FilterError>;

    /// DEL: the container's rules in every family.
    fn unforward(&mut self, setup: &Setup, container_id: &str) -> Result<(), MapError>;
}

/// Why an invocation's work under one layout failed.
#[derive(Debug)]
pub enum MapError {
    /// iptables could not list its IPv4 table (it may be unusable here)
    /// and nothing changed: the host is probed and, when it picks
    /// nftables, the work runs there. `other_family` is how DEL's IPv6
    /// teardown went, which ran meanwhile.
    Unlisted {
        /// iptables' failure.
        error: FilterError,
        /// DEL's IPv6 teardown: done, or why its ip6tables is unusable
        /// too.
        other_family: Result<(), Box<FilterError>>,
    },
    /// The configuration, read for iptables without the probe, names
    /// options of nftables (or is refused for another reason the
    /// nftables reading will say again): the host is probed too.
    NotForIptables(Error),
    /// Anything else: the invocation's error.
    Failed(Error),
}

impl ListingFailure for MapError {
    fn cannot_list(&self) -> bool {
        matches!(
            self,
            MapError::Unlisted { .. } | MapError::NotForIptables(_)
        )
    }
}

impl From<Error> for MapError {
    fn from(e: Error) -> MapError {
        MapError::Failed(e)
    }
}

impl From<FilterError> for MapError {
    fn from(e: FilterError) -> MapError {
        MapError::Failed(Error::from(e))
    }
}

/// The reference's iptables layout (`CNI-HOSTPORT-DNAT` and a chain per
/// container, in each family's `nat` table).
#[derive(Debug, Default)]
pub struct IptablesMapper(IptablesBackend);

/// The reference's nftables layout (table `cni_hostport`, a rule per
/// mapping commented with the container ID).
#[derive(Debug)]
pub struct NftablesMapper(NftBackend);

impl NftablesMapper {
    /// The mapper on a netlink socket of its own.
    pub fn open() -> Result<NftablesMapper, FilterError> {
        NftBackend::open().map(NftablesMapper)
    }
}

impl Mapper for IptablesMapper {
    fn forward(
        &mut self,
        setup: &Setup,
        container_id: &str,
        container: IpNetwork,
    ) -> Result<(), FilterError> {
        use cni_netfilter::Backend;
        self.0
            .apply(&iptables::forward(setup, container_id, container))
    }

    fn check(
        &mut self,
        setup: &Setup,
        container_id: &str,
        container: IpNetwork,
    ) -> Result<(), FilterError> {
        iptables::check(&mut self.0, setup, container_id, container)
    }

    /// Through nf_tables where it can, one family after the other; else
    /// both families at once, each its own save and restore (and its own
    /// lock): DEL waits for the slower family, not for the sum. A family
    /// whose iptables cannot list its table holds nothing of ours; an
    /// error only when neither can (or, for IPv4, [`MapError::Unlisted`]
    /// so nftables is asked first). The results are read IPv4 first, as
    /// the sequential teardown had them: the IPv6 teardown has already
    /// run when the IPv4 one fails, which removes this container's own
    /// chains, what DEL asked for.
    fn unforward(&mut self, setup: &Setup, container_id: &str) -> Result<(), MapError> {
        let network = setup.network.as_str();
        // The usual DEL on an iptables-nft host: each family's chains go
        // through nf_tables, one family after the other on the process's
        // one netfilter socket, an IPv4-only pod's IPv6 table only looked
        // at. No process and no thread: a thread's socket would be a
        // second release, and each release waits for the namespace's
        // pending deletions (see `NftBackend::open`), a convoy in a burst.
        let v4_done =
            iptables::unforward_directly(&mut self.0, network, container_id, IpFamily::V4);
        let v6_done = !iptables::may_hold(network, container_id, IpFamily::V6)
            || iptables::unforward_directly(
                &mut IptablesBackend::new(),
                network,
                container_id,
                IpFamily::V6,
            );
        if v4_done && v6_done {
            return Ok(());
        }
        // What nf_tables could not do, from listings: both families at
        // once, each its own save and restore.
        let v6_listed = || {
            let mut backend = IptablesBackend::new();
            iptables::unforward_listed(&mut backend, network, container_id, IpFamily::V6)
        };
        let [v4, mut v6] = std::thread::scope(|scope| {
            let v6 = (!v6_done).then(|| scope.spawn(v6_listed));
            let v4 = match v4_done {
                true => Ok(Ok(())),
                false => {
                    iptables::unforward_listed(&mut self.0, network, container_id, IpFamily::V4)
                }
            };
            let v6 = v6.map_or(Ok(Ok(())), |v6| {
                v6.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            });
            [v4, v6]
        });
        if matches!(v4, Ok(Err(_))) && v6_done {
            // IPv4's iptables is unusable: whether ip6tables is decides
            // the error, as the reference's `maybeGetIptables` for both;
            // learned from a listing when IPv6 needed none.
            v6 = v6_listed();
        }
        let torn = |family: &str, torn: Result<Result<(), FilterError>, FilterError>| {
            torn.map_err(|e| {
                let mut err = Error::from(e);
                err.msg = format!("could not teardown {family} dnat: {}", err.msg);
                err
            })
        };
        let v4 = torn("ipv4", v4)?;
        let v6 = torn("ipv6", v6)?;
        match v4 {
            Ok(()) => Ok(()),
            Err(error) => Err(MapError::Unlisted {
                error,
                other_family: v6.map_err(Box::new),
            }),
        }
    }
}

impl IptablesMapper {
    /// GC: the rules of `network`'s containers that `valid` does not
    /// keep, in both families; every failure reported.
    pub fn gc(&mut self, network: &str, valid: &ValidAttachments) -> Result<(), Error> {
        let mut failures = Vec::new();
        for ip in IpFamily::BOTH {
            let ids = match iptables::containers(&mut self.0, network, ip) {
                Ok(ids) => ids,
                // A family whose iptables does not work holds nothing.
                Err(_) if iptables::usable(&mut self.0, ip).is_err() => continue,
                Err(e) => {
                    failures.push(format!("iptables: {e}"));
                    continue;
                }
            };
            for id in ids.iter().filter(|id| !valid.keeps_container(id)) {
                match iptables::unforward(&mut self.0, network, id, ip) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) | Err(e) => failures.push(format!("{id}: {e}")),
                }
            }
        }
        if failures.is_empty() {
            return Ok(());
        }
        Err(Error::new(
            Code::INTERNAL,
            "failed to remove the port mappings of stale attachments",
        )
        .with_details(failures.join("; ")))
    }
}

impl Mapper for NftablesMapper {
    fn forward(
        &mut self,
        setup: &Setup,
        container_id: &str,
        container: IpNetwork,
    ) -> Result<(), FilterError> {
        nftables::forward_on(&mut self.0, setup, container_id, container)
    }

    fn check(
        &mut self,
        setup: &Setup,
        container_id: &str,
        container: IpNetwork,
    ) -> Result<(), FilterError> {
        nftables::check(&mut self.0, setup, container_id, container)
    }

    /// Both families' tables, one batch each; by the ADD's record when
    /// there is one.
    fn unforward(&mut self, setup: &Setup, container_id: &str) -> Result<(), MapError> {
        nftables::unforward_recorded(&mut self.0, &setup.network, container_id).map_err(|e| {
            let mut err = Error::from(e);
            err.msg = format!("error deleting nftables rules: {}", err.msg);
            MapError::Failed(err)
        })
    }
}

/// Runs `work` with the configuration read for the layout the reference
/// would choose and that layout's mapper, chosen once: the configured
/// `backend`, else iptables without probing the host first (one
/// `iptables` process of the three an ADD ran, bench/process/kind.sh);
/// when iptables cannot list its table, or the configuration has options
/// iptables does not take, the host is probed and `work` runs under
/// nftables if the probe picks it ([`cni_netfilter::iptables_first`]).
pub(super) fn mapped<T>(
    req: &Req,
    work: impl Fn(&Setup, &mut dyn Mapper) -> Result<T, MapError>,
) -> Result<T, MapError> {
    let requested = req
        .config
        .plugin
        .backend
        .as_deref()
        .map(str::parse::<BackendKind>)
        .transpose()?;
    let read = |backend| Setup::read(&req.config, &req.ifname, |_| backend);
    cni_netfilter::iptables_first(
        requested,
        || {
            let setup = read(BackendKind::Iptables).map_err(MapError::NotForIptables)?;
            work(&setup, &mut IptablesMapper::default())
        },
        || {
            let setup = read(BackendKind::Nftables)?;
            work(&setup, &mut NftablesMapper::open()?)
        },
    )
}
