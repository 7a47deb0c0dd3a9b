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
    cnitool
)
selection=()
for crate in "${crates[@]}"; do
    selection+=(-p "$crate")
done
# --allow-dirty: a check of what would be published, not a publication.
cargo package --offline --allow-dirty --quiet "${selection[@]}" "$@"
