//! `sbr`: a drop-in for the reference source-based routing plugin, a
//! chained plugin that makes each of the interface's addresses use a
//! routing table of its own, so replies leave by the interface their
//! request came in on (a pod with several networks).
//!
//! For each address of `CNI_IFNAME` in `prevResult` (one without an
//! interface index counts as its), ADD adds `ip rule add from ADDRESS/32
//! table T` for a table `T` that no rule or route uses yet (from 100 on),
//! a default route through the address's gateway (or `gateways`' one for
//! its family) in `T`, and copies there the interface's main-table
//! routes that belong to the address (through its subnet, or neither
//! through a gateway nor from a source); the interface's main-table
//! routes are then deleted, or with `addSourceHints` all but its subnet
//! routes, which get the address as source hint. With `table`, ADD only
//! adds the rules, to that table, and routes are the operator's. The
//! result is `prevResult`. DEL deletes the rules from the interface's
//! addresses and `prevResult`'s (to `table` only, when set); the tables
//! go with the interface. CHECK verifies each address has its rule.
//!
//! ```json
//! {"cniVersion": "1.0.0", "name": "multi", "plugins": [
//!   {"type": "ptp", "ipam": {"type": "host-local", "subnet": "10.1.0.0/24"}},
//!   {"type": "sbr"}]}
//! ```
//!
//! GC has nothing to collect: the rules and tables are the container
//! namespace's and go with it.
//!
//! Calls on one namespace take turns (a lock on the `CNI_NETNS` file,
//! as the reference's), so two interfaces never pick the same table.
//!
//! Where we deliberately differ from the reference:
//! - A bad `table` or `gateways` is code 7 naming the field, before
//!   anything changes, as are the kernel's own tables 253 (`default`),
//!   254 (`main`) and 255 (`local`), which the reference accepts; a failure part-way removes the rules and table
//!   routes added (the reference leaves them).
//! - A table is free when no rule and no route of any table uses it (the
//!   reference looks at main-table routes only, so a table holding
//!   routes without a rule would be filled further).
//! - CHECK verifies the rules; the reference's CHECK does nothing.
//! - DEL also deletes the rules of `prevResult`'s addresses, which the
//!   interface may have lost; with `table`, ADD keeps a rule already
//!   there rather than adding a second one, so an ADD after such a DEL
//!   leaves one rule.
//!
//! Go: containernetworking/plugins `plugins/meta/sbr`.

mod config;
mod routing;

use std::fs::File;
use std::time::Duration;

use cni_net::Netns;
use cni_skel::{BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{Code, Error, IpConfig, NetConf, Result100};
use nix::fcntl::Flock;

use self::config::plan;
pub use self::config::Fields;

/// Printed to stderr when run by hand.
pub const ABOUT: &str = "CNI sbr plugin v0.1.0 (cni-rs)";

/// The plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sbr;

type Req<'a> = Request<'a, NetConf<Fields>>;

/// The reference's words for an ADD (and our CHECK) without a previous
/// result.
const NOT_CHAINED: &str = "This plugin must be called as chained plugin";

impl Plugin for Sbr {
    type Config = NetConf<Fields>;
    const CHECK: CheckSupport = CheckSupport::Full;

    fn add(&self, req: &Req) -> Result<Reply, BoxError> {
        let plan = plan(req)?;
        let prev = req.prev_result_or(NOT_CHAINED)?;
        let ips = addresses_of(&prev, &req.ifname)?;
        let netns = Netns::of(req)?;
        let _turn = lock(&netns)?;
        netns
            .run(|nl| match plan.table {
                Some(table) => routing::rules_to_table(nl, &ips, table),
                None => routing::routes_per_address(nl, &plan, &req.ifname, &ips),
            })
            .map_err(|e| e.with_code(Code::INTERNAL))?;
        Ok(prev.into_owned().into())
    }

    /// Needs only the namespace and `table`.
    fn del(&self, req: &Req) -> Result<(), BoxError> {
        let table = plan(req).ok().and_then(|p| p.table);
        let Some(netns) = Netns::of_for_del(req)? else {
            return Ok(());
        };
        let known: Vec<std::net::IpAddr> = req
            .prev_result()
            .and_then(|prev| addresses_of(&prev, &req.ifname))
            .unwrap_or_default()
            .iter()
            .map(|ip| ip.address.addr())
            .collect();
        let _turn = lock(&netns)?;
        netns.run(|nl| routing::tidy_rules(nl, &req.ifname, table, &known))?;
        Ok(())
    }

    fn check(&self, req: &Req) -> Result<(), BoxError> {
        let plan = plan(req)?;
        let prev = req.prev_result_or(NOT_CHAINED)?;
        let ips = addresses_of(&prev, &req.ifname)?;
        let netns = Netns::of(req)?;
        netns
            .run(|nl| routing::check_rules(nl, &ips, plan.table))
            .map_err(|e| e.with_code(Code::INTERNAL))?;
        Ok(())
    }
}

/// The addresses of `ifname` in `prev`: those whose interface index
/// names it, or that have no index (or one out of range).
///
/// Go: `getIPCfgs`.
fn addresses_of(prev: &Result100, ifname: &str) -> Result<Vec<IpConfig>, Error> {
    if prev.ips.is_empty() {
        return Err(Error::invalid_config(
            "prevResult",
            format!("No IP addresses supplied on interface: {ifname}"),
        ));
    }
    Ok(prev
        .ips
        .iter()
        .filter(|ip| {
            ip.interface
                .and_then(|i| prev.interfaces.get(i))
                .is_none_or(|i| i.name == ifname)
        })
        .cloned()
        .collect())
}

/// The longest sbr waits for another process's turn on a namespace (each
/// holds it for milliseconds): then code 11 naming it and its holder.
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// Takes this namespace's turn: a lock on its file, held until dropped,
/// as the reference's sbr takes it (without a bound there).
fn lock(netns: &Netns) -> Result<Flock<File>, Error> {
    let file = File::open(netns.path()).map_err(|e| Error::io("open", netns.path(), e))?;
    cni_skel::flock_within(file, true, netns.path(), LOCK_TIMEOUT)
}

#[cfg(test)]
mod tests;
