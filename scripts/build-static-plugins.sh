#!/usr/bin/env bash
# Builds the plugin binaries for deployment: the `plugin` profile (LTO, one
# codegen unit, stripped, unwinding kept, optimised for size), statically
# linked against musl and not position-independent, so a plugin start pays
# no dynamic loader, no relocation processing and no glibc start-up (see
# BENCHMARKS.md for what each of those costs).
#
#   scripts/build-static-plugins.sh              all sample plugins and cnitool
#   scripts/build-static-plugins.sh -p plugins-sample --bin noop
#                                                what you name (cargo's selection)
#   LIBC=glibc scripts/build-static-plugins.sh   static glibc instead (larger and
#                                                slower to start; for comparison)
#
# The musl target comes with rustup (`rustup target add`, done here when
# missing); it needs no C toolchain for pure-Rust plugins.
#
# The flags apply to the target only: with an explicit --target, cargo keeps
# them away from build scripts and proc-macros, which must stay dynamic.
# Output: target/<target>/plugin/{noop,dns-mac,delegator,veth,ipam-file,ipam-etcd,
# host-local,bridge,ptp,tuning,loopback,portmap,bandwidth,cnitool,
# macvlan,ipvlan,vlan,tap,dummy,dhcp},
# and target/<target>/plugin/firewall,
# plus host-device,vrf,sbr,static,
# <target> being x86_64-unknown-linux-musl (or -gnu with LIBC=glibc).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${LIBC:-musl}" in
    musl) target=x86_64-unknown-linux-musl; flags="" ;;
    glibc) target=x86_64-unknown-linux-gnu; flags="-C target-feature=+crt-static" ;;
    *) echo "build-static-plugins: LIBC must be musl or glibc, not '${LIBC}'" >&2; exit 2 ;;
esac
if [ ! -d "$(rustc --print sysroot)/lib/rustlib/$target/lib" ]; then
    command -v rustup >/dev/null 2>&1 || {
        echo "build-static-plugins: the Rust target $target is missing and rustup is not here to add it" >&2
        exit 1
    }
    rustup target add "$target" >&2
fi

# Every sample plugin and cnitool, unless the arguments name packages or
# binaries themselves; other arguments (--quiet, ...) go to cargo as well.
selection=(-p plugins-sample -p cnitool --bins)
for arg in "$@"; do
    case "$arg" in
        -p | --package | --package=* | --workspace | --bin | --bin=* | --bins) selection=() ;;
    esac
done
RUSTFLAGS="${RUSTFLAGS:-} $flags -C relocation-model=static" \
    cargo build --profile plugin --target "$target" "${selection[@]}" "$@"
