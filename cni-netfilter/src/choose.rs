//! The reference's choice of backend, made in one place.

use crate::iptables::Variant;
use crate::nft::NftBackend;
use crate::{BackendKind, Family, Table, Transaction};

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

/// Whether `iptables` can be used: it runs, and can check for the filter
/// table's INPUT chain (`iptables -t filter -S INPUT 1 -w` ends with status 0
/// or 1). It says nothing about whether anything else on the host uses
/// iptables.
///
/// Go: plugins `utils.SupportsIPTables`.
pub fn iptables_usable() -> bool {
    let program = Variant::Default.program(Family::Ip, "");
    std::process::Command::new(program)
        .args(["-t", "filter", "-S", "INPUT", "1", "-w"])
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
