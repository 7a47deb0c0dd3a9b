//! The reference's choice of backend, made in one place.

use crate::iptables::Variant;
use crate::nft::NftBackend;
use crate::{BackendKind, Family, FilterError, Table, Transaction};

/// The backend a plugin uses: the one its configuration asked for, else
/// iptables, unless iptables is unusable and nftables is usable.
///
/// This is the reference's rule, in portmap (`ensureBackend`) and in the
/// masquerading of bridge and ptp (`ip.SetupIPMasqForNetworks`): "Prefer
/// iptables, unless only nftables is available". A plugin checks its
/// backend-specific options against the result (portmap refuses
/// `externalSetMarkChain` under nftables).
///
/// ```no_run
/// use cni_netfilter::{choose, BackendKind};
///
/// assert_eq!(choose(Some(BackendKind::Nftables)), BackendKind::Nftables);
/// let default = choose(None); // probes the host
/// ```
///
/// Go: plugins `portmap.ensureBackend`, `ip.SetupIPMasqForNetworks`.
pub fn choose(requested: Option<BackendKind>) -> BackendKind {
    choose_with(requested, iptables_usable, nftables_usable)
}

/// [`choose`] with the probes given, so the rule is tested on its own.
fn choose_with(
    requested: Option<BackendKind>,
    iptables: impl FnOnce() -> bool,
    nftables: impl FnOnce() -> bool,
) -> BackendKind {
    match requested {
        Some(kind) => kind,
        None if !iptables() && nftables() => BackendKind::Nftables,
        None => BackendKind::Iptables,
    }
}

/// Whether an iptables failure is its table not being listable (the
/// command missing, or `iptables-save` failing): iptables may be unusable
/// here, and a transaction that failed so changed nothing.
///
/// With it a plugin tries iptables first and probes ([`choose`]) only
/// when that fails, instead of starting `iptables -S INPUT 1` on every
/// ADD: see [`iptables_first`].
pub fn cannot_list(e: &FilterError) -> bool {
    matches!(e, FilterError::Unlisted(_))
}

/// An error that may be iptables failing to list its table: what makes
/// [`iptables_first`] probe the host. A plugin whose work returns its own
/// error type says which of its errors are such.
pub trait ListingFailure {
    /// Whether iptables could not list its table (it may be unusable
    /// here) and nothing changed.
    fn cannot_list(&self) -> bool;
}

impl ListingFailure for FilterError {
    fn cannot_list(&self) -> bool {
        cannot_list(self)
    }
}

/// Runs `iptables` under the backend [`choose`] picks for `requested`,
/// without its probe when nothing is requested: iptables is tried first,
/// and only when it cannot list its table ([`ListingFailure`]) is the
/// host probed, `nftables` running when the probe picks nftables. The
/// outcome is [`choose`]'s, one `iptables` process fewer when iptables
/// works.
///
/// `iptables` must change nothing before its first listing (an
/// `IptablesBackend` transaction lists first). A listing that fails
/// after an earlier family changed is still taken for an unusable
/// iptables when the probe agrees, which then means iptables stopped
/// working between the two commands.
pub fn iptables_first<T, E: ListingFailure>(
    requested: Option<BackendKind>,
    iptables: impl FnOnce() -> Result<T, E>,
    nftables: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    iptables_first_with(requested, iptables, nftables, || choose(None))
}

/// [`iptables_first`] with the probe given.
fn iptables_first_with<T, E: ListingFailure>(
    requested: Option<BackendKind>,
    iptables: impl FnOnce() -> Result<T, E>,
    nftables: impl FnOnce() -> Result<T, E>,
    probe: impl FnOnce() -> BackendKind,
) -> Result<T, E> {
    match requested {
        Some(BackendKind::Iptables) => iptables(),
        Some(BackendKind::Nftables) => nftables(),
        None => match iptables() {
            Err(e) if e.cannot_list() => match probe() {
                BackendKind::Nftables => nftables(),
                BackendKind::Iptables => Err(e),
            },
            other => other,
        },
    }
}

/// Whether `iptables` can be used: it runs, and can check for the filter
/// table's INPUT chain (`iptables -t filter -S INPUT 1 -w 10` ends with
/// status 0 or 1). It says nothing about whether anything else on the host
/// uses iptables. iptables-legacy waits for its host-wide xtables lock at
/// most [`LOCK_DEADLINE`](crate::iptables::LOCK_DEADLINE) (a bare `-w` would wait
/// for as long as a stuck holder keeps it).
///
/// Go: plugins `utils.SupportsIPTables`.
pub fn iptables_usable() -> bool {
    let program = Variant::Default.program(Family::Ip, "");
    let wait = crate::iptables::LOCK_DEADLINE.as_secs().max(1).to_string();
    std::process::Command::new(program)
        .args(["-t", "filter", "-S", "INPUT", "1", "-w", &wait])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| matches!(status.code(), Some(0 | 1)))
}

/// Whether nftables can be used: the kernel accepts (in a batch it then
/// discards) a table with a comment, so netlink works, we may change the
/// ruleset, and the kernel stores object comments.
///
/// Go: plugins `utils.SupportsNFTables` (through `knftables.New`, which
/// runs `nft --check` the same way).
pub fn nftables_usable() -> bool {
    let table = Table::new(Family::Ip, "supports_nftables_test").with_comment("test");
    let mut tx = Transaction::new(table);
    tx.ensure_table();
    NftBackend::open()
        .and_then(|mut nft| nft.check(&tx))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(line: &str) -> FilterError {
        FilterError::Command {
            command: line.into(),
            status: "exit status 1".into(),
            stderr: "x".into(),
        }
    }

    #[test]
    fn only_an_iptables_that_cannot_list_is_a_reason_to_probe() {
        let missing = FilterError::Spawn {
            command: "iptables-restore --noflush -w 10".into(),
            source: std::io::Error::from_raw_os_error(2),
        };
        assert!(!cannot_list(&missing));
        assert!(!cannot_list(&command("iptables-restore --noflush -w")));
        let unlisted = FilterError::Unlisted(Box::new(command("iptables-save -t nat")));
        assert!(cannot_list(&unlisted));
        // It says what the command said.
        assert_eq!(
            unlisted.to_string(),
            "iptables-save -t nat failed (exit status 1): x"
        );
    }

    #[test]
    fn iptables_first_probes_only_when_iptables_cannot_list() {
        use BackendKind::{Iptables, Nftables};
        fn ran(r: Result<&'static str, FilterError>) -> Result<&'static str, String> {
            r.map_err(|e| e.to_string())
        }
        let unprobed = || -> BackendKind { panic!("probed") };
        // Works: no probe, iptables' result.
        let ok = iptables_first_with(None, || Ok("ipt"), || Ok("nft"), unprobed);
        assert_eq!(ran(ok), Ok("ipt"));
        // A restore failure is iptables' error, not a reason to switch.
        let failed = iptables_first_with(
            None,
            || Err(command("iptables-restore --noflush -w")),
            || Ok("nft"),
            unprobed,
        );
        assert!(ran(failed).is_err());
        // Cannot list: the probe decides.
        let save = || {
            Err(FilterError::Unlisted(Box::new(command(
                "iptables-save -t nat",
            ))))
        };
        let r = iptables_first_with(None, save, || Ok("nft"), || Nftables);
        assert_eq!(ran(r), Ok("nft"));
        let r = iptables_first_with(None, save, || Ok("nft"), || Iptables);
        assert!(ran(r).unwrap_err().contains("iptables-save"));
        // A request is obeyed without a probe.
        let r = iptables_first_with(Some(Nftables), save, || Ok("nft"), unprobed);
        assert_eq!(ran(r), Ok("nft"));
        let r = iptables_first_with(Some(Iptables), save, || Ok("nft"), unprobed);
        assert!(ran(r).is_err());
    }

    #[test]
    fn iptables_wins_unless_only_nftables_is_usable_and_a_request_wins_always() {
        use BackendKind::{Iptables, Nftables};
        let cases = [
            // (requested, iptables usable, nftables usable) -> chosen
            (None, true, true, Iptables),
            (None, true, false, Iptables),
            (None, false, true, Nftables),
            (None, false, false, Iptables),
            (Some(Nftables), true, true, Nftables),
            (Some(Iptables), false, true, Iptables),
        ];
        for (requested, ipt, nft, chosen) in cases {
            assert_eq!(
                choose_with(requested, || ipt, || nft),
                chosen,
                "{requested:?} {ipt} {nft}"
            );
        }
    }
}
