#!/usr/bin/env bash
# Podman's default chain, ours against Debian's reference plugins: the
# list `podman network create` writes (Podman 4.3.1, CNI backend: bridge
# with isGateway, ipMasq, hairpinMode + host-local + portmap + firewall
# with backend "" + tuning, cniVersion 0.4.0), with one port mapping as
# `podman run -p 8080:80` passes it, ADD then DEL, run by the same
# runtime (our cnitool, static) for both sides, rounds interleaved (the
# order alternating), everything inside a host namespace of the
# benchmark's own (bench/process/podman_chain.py times and reports).
#
# usage: bench/process/podman_chain.sh [ROUNDS]   (default 120: 20
#        warm-up + 100; under 40 rounds none is a warm-up). Needs root.
#        BENCH_OURS_DIR=DIR uses the static plugins in DIR instead of
#        building them (bridge, host-local, portmap, firewall, tuning).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-120}
warmup=20
[ "$rounds" -lt 40 ] && warmup=0
out=target/bench/podman-chain
rm -rf "$out"
mkdir -p "$out/net.d" "$out/cache"

scripts/install-test-deps.sh >/dev/null
plugins=(bridge host-local portmap firewall tuning)
static=target/x86_64-unknown-linux-musl/plugin
if [ -n "${BENCH_OURS_DIR:-}" ]; then
    ours=$(cd "$BENCH_OURS_DIR" && pwd)
    echo "ours: the plugins in $ours; building cnitool (static musl)" >&2
    scripts/build-static-plugins.sh --quiet -p cnitool --bin cnitool >/dev/null
else
    echo "building: ${plugins[*]} and cnitool (static musl, as deployed)" >&2
    bins=()
    for p in "${plugins[@]}"; do bins+=(--bin "$p"); done
    scripts/build-static-plugins.sh --quiet -p plugins-sample "${bins[@]}" -p cnitool --bin cnitool >/dev/null
    ours=$(pwd)/$static
fi
reference=/usr/lib/cni
for p in "${plugins[@]}"; do
    [ -x "$ours/$p" ] || { echo "podman_chain.sh: our $p is missing in $ours" >&2; exit 1; }
    [ -x "$reference/$p" ] || { echo "podman_chain.sh: $reference/$p is missing (scripts/install-test-deps.sh)" >&2; exit 1; }
done

tag="$$"
host="cni-rs-bench-pc-$tag"
declare -A netns=([ours]="cni-rs-bench-pco-$tag" [reference]="cni-rs-bench-pcr-$tag")
declare -A network=([ours]="bench-podman-ours-$tag" [reference]="bench-podman-ref-$tag")
cleanup() {
    for ns in "$host" "${netns[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    # host-local keeps a list without dataDir under /var/lib/cni/networks.
    for n in "${network[@]}"; do rm -rf "/var/lib/cni/networks/$n"; done
}
trap cleanup EXIT
for ns in "$host" "${netns[@]}"; do ip netns add "$ns"; done
ip -n "$host" link set lo up

subnet=0
for side in ours reference; do
    subnet=$((subnet + 1))
    cat > "$out/net.d/${network[$side]}.conflist" <<JSON
{
   "cniVersion": "0.4.0",
   "name": "${network[$side]}",
   "plugins": [
      {"type": "bridge", "bridge": "cni-podman$subnet", "isGateway": true, "ipMasq": true,
       "hairpinMode": true,
       "ipam": {"type": "host-local", "routes": [{"dst": "0.0.0.0/0"}],
                "ranges": [[{"subnet": "10.219.25$subnet.0/24", "gateway": "10.219.25$subnet.1"}]]},
       "capabilities": {"ips": true}},
      {"type": "portmap", "capabilities": {"portMappings": true}},
      {"type": "firewall", "backend": ""},
      {"type": "tuning"}
   ]
}
JSON
done

ip netns exec "$host" python3 bench/process/podman_chain.py "$rounds" "$warmup" \
    "$(pwd)/$static/cnitool" "$(pwd)/$out/net.d" "$(pwd)/$out/cache" \
    "ours:$ours:${network[ours]}:/run/netns/${netns[ours]}" \
    "reference:$reference:${network[reference]}:/run/netns/${netns[reference]}" \
    --samples "$out/samples"
