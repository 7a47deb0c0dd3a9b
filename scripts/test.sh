#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the reference peers the
# interoperability tests need (Go, libcni, the reference plugins), then
# formatting, lints, docs and every test of the workspace, a smoke run of
# the benchmark harnesses, and the demo. Interop tests fail, never skip,
# when a peer is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-deps.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# --all-targets leaves out targets with `test = false`: the vm_* tests.
cargo clippy -p tests --test 'vm_*' --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# The crates as crates.io would receive them, in publish order, built from
# their packages (offline; about a minute).
scripts/package.sh
# Every test, the ones that need root too (namespaces, netlink, nft,
# iptables, podman, the reference plugins that need CAP_NET_ADMIN): they
# are marked #[ignore = "needs root: ..."] so that a contributor's plain
# `cargo test` reports them as ignored, and CI never skips one.
cargo test --workspace -- --include-ignored
# A sample copied out of the workspace (macvlan, its tests, its main)
# builds against the SDK crates alone and passes its own tests.
scripts/sample-outside.sh
# The vm_* tests (tests/vm/): link kinds this kernel lacks (vlan, ipvlan,
# vrf, dummy, bonding), all in one boot of Debian's kernel: user-mode
# Linux where a trivial guest boots on this host, QEMU where it cannot
# (AMX hosts); the script says which and why (docs/vm.md).
scripts/vm/run-tests.sh
# Benchmarks are not tests: this only checks that both harnesses still
# build and run end to end (3 rounds, each benchmark once); the figures are
# neither printed nor checked.
bench/process/run.sh 3 >/dev/null
bench/process/interface.sh 3 >/dev/null
bench/process/kind.sh 3 >/dev/null
bench/process/podman.sh 3 >/dev/null
bench/process/burst.sh 1 4 >/dev/null
bench/process/status.sh 3 >/dev/null
# The churn's short version: 20 pods present, 200 cycles, STATUS every
# second and GC every 5 s, then the leak check (any leftover fails it).
CHURN_CASES=ours bench/process/churn.sh 200 20 1s 5s >/dev/null
bench/inprocess.sh --smoke >/dev/null
bench/ipam/run.sh 3 >/dev/null
# The main job (README's first command), with the plugins built as they are
# deployed (static, musl): a Podman container, else cnitool.
scripts/demo.sh >/dev/null
