#!/usr/bin/env bash
# Builds the plugin binaries for deployment: the `plugin` profile (LTO, one
# codegen unit, stripped, unwinding kept, optimised for size), statically
# linked and not position-independent, so a plugin start pays no dynamic
# loader and no relocation processing (see BENCHMARKS.md for what that buys).
#
# The flags apply to the target only: with an explicit --target, cargo keeps
# them away from build scripts and proc-macros, which must stay dynamic.
# Output: target/x86_64-unknown-linux-gnu/plugin/{noop,dns-mac,delegator,veth,ipam-file,cnitool}
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static -C relocation-model=static" \
    cargo build --profile plugin --target x86_64-unknown-linux-gnu -p plugins-sample -p cni-invoke --bins "$@"
