# Sourced by the chain benchmarks (kind.sh, podman.sh): what they share to
# run a network list, as a runtime does, through bench/process/netns_harness.c
# against Debian's reference plugins. Expects to run from the repository root
# under `set -euo pipefail`; sets `root` to that root.
root=$(pwd)

# chain_rounds [ROUNDS]: `rounds` (default 220) and `warmup` (the first
# 20; none under 100 rounds: a smoke run checks it builds and runs); and
# `settle`, the harness's pause after each namespace's removal
# (CHAIN_SETTLE_MS, default 100: netns_harness.c says why).
chain_rounds() {
    rounds=${1:-220}
    warmup=20
    if [ "$rounds" -lt 100 ]; then warmup=0; fi
    settle=(--settle "${CHAIN_SETTLE_MS:-100}")
}

# chain_prepare OUT NO_BUILD BIN...: an empty OUT, the harness built at
# OUT/netns_harness, ours (static musl, as deployed; not rebuilt when
# NO_BUILD is non-empty) copied to OUT/ours, and each BIN checked in the
# reference directory, which `reference` then names.
chain_prepare() {
    local out=$1 no_build=$2 bin
    shift 2
    rm -rf "$out"
    mkdir -p "$out/ours"
    scripts/install-test-deps.sh >/dev/null
    echo "building: harness (gcc -O2 -static), $(echo "$@" | sed 's/ /, /g') (static musl, as deployed)" >&2
    gcc -O2 -static -o "$out/netns_harness" bench/process/netns_harness.c
    if [ -z "$no_build" ]; then
        local args=()
        for bin in "$@"; do args+=(--bin "$bin"); done
        scripts/build-static-plugins.sh --quiet -p plugins-sample "${args[@]}" >/dev/null
    fi
    for bin in "$@"; do
        cp "target/x86_64-unknown-linux-musl/plugin/$bin" "$out/ours/"
    done
    reference=/usr/lib/cni
    for bin in "$@"; do
        [ -x "$reference/$bin" ] || { echo "$(basename "$0"): $reference/$bin is missing (scripts/install-test-deps.sh)" >&2; exit 1; }
    done
}

# chain_netns NAME: `netns` set to NAME; a namespace of that name a failed
# run leaves is removed on exit (after a normal run there is none).
chain_netns() {
    netns=$1
    trap 'umount -l "/run/netns/$netns" 2>/dev/null || true; rm -f "/run/netns/$netns"' EXIT
}

# chain_env PREFIX PLUGIN_DIR CONTAINER_NAME [CNI_ARGS]: PREFIX-ADD.env and
# PREFIX-DEL.env, the environment the harness gives each plugin (container
# ID the SHA-256 of CONTAINER_NAME, namespace `netns`, interface eth0).
chain_env() {
    local prefix=$1 dir=$2 id command
    id=$(printf '%s' "$3" | sha256sum | cut -c1-64)
    for command in ADD DEL; do
        {
            printf 'PATH=/usr/sbin:/usr/bin:/sbin:/bin\nCNI_COMMAND=%s\nCNI_CONTAINERID=%s\nCNI_NETNS=/run/netns/%s\nCNI_IFNAME=eth0\nCNI_PATH=%s\n' \
                "$command" "$id" "$netns" "$dir"
            [ -z "${4:-}" ] || printf 'CNI_ARGS=%s\n' "$4"
        } > "$prefix-$command.env"
    done
}
