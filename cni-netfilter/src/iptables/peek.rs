//! A look at iptables' tables without an `iptables-save` process, for
//! teardowns that usually find nothing to remove.

use crate::nft::NftBackend;
use crate::{Family, Table};

/// Whether `family`'s iptables table `table` may hold a rule naming one of
/// `needles` (an interface name, an address's bytes, a chain name or a
/// comment): `false` only when that is certain, so a teardown that skips
/// its `iptables-save` and `iptables-restore` on `false` removes exactly
/// what it would have removed.
///
/// - iptables-legacy: its tables of the calling thread's network
///   namespace are listed in `/proc/thread-self/net/ip_tables_names`
///   (`ip6_tables_names`) once anything created them; a table listed
///   there may hold anything.
/// - iptables-nft keeps the table as the nf_tables table of the same name
///   and family, whose rules carry names and addresses as they are
///   ([`NftBackend::table_mentions`]).
///
/// Any failure to look answers `true`.
///
/// Measured (bench/process/podman.sh): a firewall ADD on a bridge with no
/// isolation rules ran two `iptables-save` processes, 2 to 9 ms each, to
/// find that out.
pub fn may_mention(family: Family, table: &str, needles: &[&[u8]]) -> bool {
    may_mention_each(family, table, needles).contains(&true)
}

/// [`may_mention`] for each of `needles`, in their order, from one look:
/// `false` where that needle is certainly not named.
pub fn may_mention_each(family: Family, table: &str, needles: &[&[u8]]) -> Vec<bool> {
    if legacy_may_hold(family, table) {
        return vec![true; needles.len()];
    }
    NftBackend::open()
        .and_then(|mut nft| nft.table_mentions_each(&Table::new(family, table), needles))
        .unwrap_or_else(|_| vec![true; needles.len()])
}

/// Whether iptables-legacy may hold `table` of `family` in the calling
/// thread's network namespace: its tables are listed in
/// `/proc/thread-self/net/ip_tables_names` (`ip6_tables_names`) once
/// anything created them, and the file is absent without the legacy
/// modules. Any other failure to read it answers `true`.
pub(crate) fn legacy_may_hold(family: Family, table: &str) -> bool {
    let legacy = match family {
        Family::Ip6 => "/proc/thread-self/net/ip6_tables_names",
        _ => "/proc/thread-self/net/ip_tables_names",
    };
    match std::fs::read_to_string(legacy) {
        Ok(names) => names.lines().any(|l| l == table),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}
