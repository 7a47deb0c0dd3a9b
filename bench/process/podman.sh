#!/usr/bin/env bash
# Podman's default chain benchmark: the network list `podman network
# create --subnet 10.219.1.0/24 podbench` writes (Podman 4.3.1, CNI
# backend; captured on this machine with a temporary containers.conf as
# tests/src/podman.rs writes one), at cniVersion 0.4.0:
#
#   bridge  {"bridge": "cni-podman1", "isGateway": true, "ipMasq": true,
#            "hairpinMode": true, "capabilities": {"ips": true},
#            "ipam": {"type": "host-local", "routes": [{"dst": "0.0.0.0/0"}],
#                     "ranges": [[{"subnet": ..., "gateway": ...}]]}}
#   portmap {"capabilities": {"portMappings": true}}
#   firewall {"backend": ""}
#   tuning  {}
#
# run as libcni runs a list: each plugin's configuration gets the list's
# name and cniVersion and its capabilities' runtimeConfig (here one host
# port, tcp 8080 -> 80, as Podman's `-p 8080:80` gives it; no static IP,
# so no `ips`); ADD in order, each with the previous result as
# prevResult; DEL in reverse, each with the list's cached ADD result as
# prevResult (0.4.0). CNI_ARGS as Podman's CNI backend sends them
# (IgnoreUnknown=1;K8S_POD_NAME=<container name>). A fresh container
# namespace each round, all in a host namespace the harness
# (bench/process/netns_harness.c) makes. Departures from Podman's file,
# for isolation only: each case its own network name, bridge
# (cni-podman1..3) and subnet, and host-local's dataDir under target/.
#
# Three cases interleaved per round: Debian's reference plugins
# (/usr/lib/cni), ours with the default backends (no key: iptables here),
# ours with nftables (bridge "ipMasqBackend", portmap and firewall
# "backend").
#
# usage: bench/process/podman.sh [ROUNDS]   (default 220: 20 warm-up +
#        200; under 100 rounds, none is a warm-up: CI runs it with 3 to
#        check it still builds and runs, not to measure). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/process/chain.sh
chain_rounds "${1:-}"
out=target/bench/podman
plugins=(bridge portmap firewall tuning)
chain_prepare "$out" "${PODMAN_BENCH_NO_BUILD:-}" "${plugins[@]}" host-local
chain_netns "cni-rs-bench-podman-$$"
# case name, plugin directory, bridge's, portmap's and firewall's extra
# keys, index (network podbench-N, bridge cni-podmanN, 10.219.N.0/24)
cases=(
    "reference $reference - - - 1"
    "ours-default $root/$out/ours - - - 2"
    "ours-nftables $root/$out/ours ,\"ipMasqBackend\":\"nftables\" ,\"backend\":\"nftables\" \"nftables\" 3"
)
specs=()
for entry in "${cases[@]}"; do
    read -r name dir bridge_extra portmap_extra firewall_backend n <<<"$entry"
    [ "$bridge_extra" = - ] && bridge_extra=
    [ "$portmap_extra" = - ] && portmap_extra=
    [ "$firewall_backend" = - ] && firewall_backend='""'
    network="podbench-$n"
    head="\"cniVersion\": \"0.4.0\", \"name\": \"$network\""
    mkdir -p "$out/$name-ipam"
    cat > "$out/$name-bridge.json" <<JSON
{$head, "type": "bridge", "bridge": "cni-podman$n", "isGateway": true, "ipMasq": true,
 "hairpinMode": true$bridge_extra,
 "ipam": {"type": "host-local", "dataDir": "$root/$out/$name-ipam", "routes": [{"dst": "0.0.0.0/0"}],
          "ranges": [[{"subnet": "10.219.$n.0/24", "gateway": "10.219.$n.1"}]]},
 "capabilities": {"ips": true}@PREV@}
JSON
    cat > "$out/$name-portmap.json" <<JSON
{$head, "type": "portmap", "capabilities": {"portMappings": true}$portmap_extra,
 "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}@PREV@}
JSON
    cat > "$out/$name-firewall.json" <<JSON
{$head, "type": "firewall", "backend": $firewall_backend@PREV@}
JSON
    cat > "$out/$name-tuning.json" <<JSON
{$head, "type": "tuning"@PREV@}
JSON
    chain_env "$out/$name" "$dir" "bench-podman-$name" "IgnoreUnknown=1;K8S_POD_NAME=bench-$name"
    bins=() files=()
    for p in "${plugins[@]}"; do bins+=("$dir/$p"); files+=("$out/$name-$p.json"); done
    specs+=("$(IFS=,; echo "${bins[*]}"):$(IFS=,; echo "${files[*]}"):$out/$name-ADD.env:$out/$name-DEL.env")
done
"$out/netns_harness" --del-prev "${settle[@]}" "$rounds" "$netns" "${specs[@]}" > "$out/samples"
python3 bench/process/report_podman.py "$out" "$warmup"
