#!/usr/bin/env bash
# Packages the publishable crates exactly as crates.io would receive them,
# in publish order, and builds each from its package (cargo's verify
# step). Crates whose path dependencies are not published yet are
# verified against a local registry overlay of the packages made before
# them (cargo >= 1.90), so this runs offline and publishes nothing.
#
#   scripts/package.sh                 check every crate (CI does this)
#   scripts/package.sh --no-verify     only assemble the .crate files
#
# The order is the publish order (docs/publishing.md): each crate comes
# after every crate it depends on. A new library crate is added here.
set -euo pipefail
cd "$(dirname "$0")/.."

crates=(
    cni-version
    cni-types
    cni-skel
    cni-invoke
    cni-net
    cni-netfilter
    cni-ipam
    cni-dhcp
    cnitool
    cni-conformance
)
selection=()
for crate in "${crates[@]}"; do
    selection+=(-p "$crate")
done
# Cargo unpacks the overlay's crates under $CARGO_HOME/registry/src and
# reuses an unpacked copy of the same version even when the crate changed,
# so a second run would verify against stale siblings. A CARGO_HOME of our
# own under target/ (sharing the crates.io index and downloads) keeps those
# copies ours, and they are removed before each run.
real_home=${CARGO_HOME:-$HOME/.cargo}
home=$PWD/target/package-home
mkdir -p "$home/registry/src"
for shared in registry/index registry/cache config.toml; do
    if [ -e "$real_home/$shared" ] && [ ! -e "$home/$shared" ]; then
        ln -s "$real_home/$shared" "$home/$shared"
    fi
done
rm -rf "$home"/registry/src/-*
# --allow-dirty: a check of what would be published, not a publication.
CARGO_HOME=$home cargo package --offline --allow-dirty --quiet "${selection[@]}" "$@"
