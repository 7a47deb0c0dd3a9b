//! What the root tests share: commands run inside a test's namespace, and
//! the kernel's ruleset as `nft -j` shows it.

#![allow(dead_code)] // Each test file uses its own part.

use std::process::Output;

use cni_net::testing::TempNetns;
use serde_json::Value;

/// Runs `program args` inside `netns` (`ip netns exec`), feeding it
/// `stdin`; panics with its stderr when it fails.
pub fn run_in(netns: &TempNetns, program: &str, args: &[&str], stdin: &str) -> String {
    let output = output_in(netns, program, args, stdin);
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Runs `program args` inside `netns` and returns what it did.
pub fn output_in(netns: &TempNetns, program: &str, args: &[&str], stdin: &str) -> Output {
    netns.exec(program, args, stdin).unwrap()
}

/// `nft -j list ruleset` in `netns`, without what differs between two
/// equal rulesets: the metainfo and the handles.
pub fn ruleset(netns: &TempNetns) -> Value {
    netns.nft_ruleset().unwrap()
}

/// The rules of the ruleset (each object's `rule`), in order.
pub fn rules(ruleset: &Value) -> Vec<Value> {
    ruleset["nftables"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|object| object.get("rule").cloned())
        .collect()
}

/// A fresh namespace for a test, named after it.
pub fn netns(tag: &str) -> TempNetns {
    TempNetns::new(tag).expect("a namespace of the test's own (run as root)")
}

/// Any error, for closures run inside a namespace.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Runs `f` with an nftables backend opened inside `netns`.
pub fn with_nft<T: Send>(
    netns: &TempNetns,
    f: impl FnOnce(&mut cni_netfilter::nft::NftBackend) -> Result<T, BoxError> + Send,
) -> T {
    netns
        .run(|_| f(&mut cni_netfilter::nft::NftBackend::open()?))
        .unwrap()
}

/// Runs `f` with an nftables backend opened inside `netns`, and returns
/// its result, error included.
pub fn try_nft<T: Send>(
    netns: &TempNetns,
    f: impl FnOnce(&mut cni_netfilter::nft::NftBackend) -> Result<T, cni_netfilter::FilterError> + Send,
) -> Result<T, cni_netfilter::FilterError> {
    let opened = netns.run(|_| {
        Ok::<_, BoxError>(cni_netfilter::nft::NftBackend::open().and_then(|mut nft| f(&mut nft)))
    });
    opened.unwrap()
}

/// Runs `f` with an iptables backend of `variant` inside `netns`: the
/// commands it starts run in the namespace of the thread that starts them.
pub fn try_iptables<T: Send>(
    netns: &TempNetns,
    variant: cni_netfilter::iptables::Variant,
    f: impl FnOnce(
            &mut cni_netfilter::iptables::IptablesBackend,
        ) -> Result<T, cni_netfilter::FilterError>
        + Send,
) -> Result<T, cni_netfilter::FilterError> {
    let ran = netns.run(|_| {
        let mut backend = cni_netfilter::iptables::IptablesBackend::with_variant(variant);
        Ok::<_, BoxError>(f(&mut backend))
    });
    ran.unwrap()
}
