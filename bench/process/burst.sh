#!/usr/bin/env bash
# Burst benchmark: N pods arrive at once, then leave at once, as when a
# deployment scales up and down. For each N and each network list: N ADDs
# of the list started together through Debian's libcni (1.1.2, driven by
# bench/go/src/cniburst), one fresh network namespace per pod, then N DELs
# together; per-pod p50 / p99 and the makespan of each. Beside them, in
# the same run, the kernel floor (cni-net/examples/burst_floor.rs): the
# same veth (container end created in the pod's namespace), bridge port,
# address and default route for N pods in parallel threads, the links
# left as the list's plugin leaves them (bridge's DAD off and arp_notify
# in the container, hairpin or promiscuous mode), and where the list
# filters packets one `nft -f` batch per pod with as many rules.
#
# Lists, as their runtimes write them (dataDir under target/ for isolation):
#   podman      Podman 4's default network: bridge cni-podman0 (isGateway,
#               ipMasq, hairpinMode) + host-local 10.88.0.0/16, portmap,
#               firewall, tuning; cniVersion 0.4.0; default backends
#   podman-nft  the same with every backend nftables (ours only: Debian's
#               reference 1.1.1 has no nftables backend)
#   kind        kindnet's: ptp (mtu 1500) + host-local, portmap; 0.3.1
#   containerd  containerd's default (10-containerd-net.conflist): bridge
#               cni0 (isGateway, ipMasq, promiscMode) + host-local
#               10.88.0.0/16 and 2001:4860:4860::/64, portmap; 1.0.0
# Each case runs in a node namespace of its own (`unshare --net`), so the
# bridges, rules and tables of one case never meet another's and the host's
# are never touched. Cases are interleaved round by round: reference, ours,
# floor; afterwards each case's node is checked for leftovers (links other
# than lo and the bridge, reservations, libcni cache entries): ours or the
# floor's fail the run, the reference's are shown.
#
# usage: bench/process/burst.sh [ROUNDS [N...]]   (default 5 rounds of 30
#        and 100; `burst.sh 1 4` is the smoke run). Needs root. Writes
#        target/bench/burst/{table.md,burst-N.svg}; BURST_LISTS picks lists,
#        BURST_BINS a directory of plugins already built, BURST_FLOOR=no
#        leaves the floor out (scripts/demo.sh's burst of ten), BURST_STATE
#        the directory of each case's IPAM dataDir and libcni cache
#        (default target/bench/burst; BURST_STATE=/dev/shm/cni-burst puts
#        them on a tmpfs, see BENCHMARKS.md for why that can matter).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
rounds=${1:-5}
shift || true
sizes=("${@:-30 100}")
# shellcheck disable=SC2206
sizes=(${sizes[*]})
lists=(${BURST_LISTS:-podman podman-nft kind containerd})
out=target/bench/burst
rm -rf "$out"
mkdir -p "$out/ours" "$out/runs"
state=${BURST_STATE:-$root/$out}
case $state in /*) ;; *) state="$root/$state" ;; esac
rm -rf "$state"/ipam-* "$state"/cache-*
mkdir -p "$state"
scripts/install-test-deps.sh >/dev/null
reference=/usr/lib/cni
echo "building: cniburst (Go, Debian's libcni), the floor and our plugins (static musl, as deployed)" >&2
GO111MODULE=off GOPATH="$root/bench/go:/usr/share/gocode" go build -o "$out/cniburst" cniburst
# BURST_BINS=DIR takes the plugins from DIR and the floor from
# DIR/examples instead (a smoke run on a debug build).
bins=${BURST_BINS:-}
if [ -z "$bins" ]; then
    scripts/build-static-plugins.sh --quiet -p plugins-sample --bin bridge --bin ptp \
        --bin host-local --bin portmap --bin firewall --bin tuning >/dev/null
    bins=target/x86_64-unknown-linux-musl/plugin
fi
with_floor=${BURST_FLOOR:-yes}
if [ "$with_floor" = yes ]; then
    [ -n "${BURST_BINS:-}" ] || scripts/build-static-plugins.sh --quiet -p cni-net --example burst_floor >/dev/null
    cp "$bins/examples/burst_floor" "$out/floor"
fi
for bin in bridge ptp host-local portmap firewall tuning; do cp "$bins/$bin" "$out/ours/"; done

# list NAME CASE: the list's file for a case (its own IPAM directory).
list() {
    local name=$1 case=$2 ipam="$state/ipam-$2-$1" masq= pm= fw='""'
    mkdir -p "$ipam"
    case $name in
    podman | podman-nft)
        if [ "$name" = podman-nft ]; then
            masq=', "ipMasqBackend": "nftables"' pm=', "backend": "nftables"' fw='"nftables"'
        fi
        cat <<JSON
{"cniVersion": "0.4.0", "name": "podman", "plugins": [
 {"type": "bridge", "bridge": "cni-podman0", "isGateway": true, "ipMasq": true, "hairpinMode": true$masq,
  "ipam": {"type": "host-local", "dataDir": "$ipam", "routes": [{"dst": "0.0.0.0/0"}],
           "ranges": [[{"subnet": "10.88.0.0/16", "gateway": "10.88.0.1"}]]}},
 {"type": "portmap", "capabilities": {"portMappings": true}$pm},
 {"type": "firewall", "backend": $fw},
 {"type": "tuning"}]}
JSON
        ;;
    kind)
        cat <<JSON
{"cniVersion": "0.3.1", "name": "kindnet", "plugins": [
 {"type": "ptp", "ipMasq": false, "mtu": 1500,
  "ipam": {"type": "host-local", "dataDir": "$ipam", "routes": [{"dst": "0.0.0.0/0"}],
           "ranges": [[{"subnet": "10.244.0.0/24"}]]}},
 {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
        ;;
    containerd)
        cat <<JSON
{"cniVersion": "1.0.0", "name": "containerd-net", "plugins": [
 {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "promiscMode": true,
  "ipam": {"type": "host-local", "dataDir": "$ipam",
           "ranges": [[{"subnet": "10.88.0.0/16"}], [{"subnet": "2001:4860:4860::/64"}]],
           "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]}},
 {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
        ;;
    esac
}

# Rules per pod in the floor's batch: what the list's packet filtering
# adds for one pod (portmap's DNAT and two masquerading rules, ipMasq's
# two, the firewall's two).
floor_rules() {
    case $1 in podman | podman-nft) echo 7 ;; kind) echo 3 ;; containerd) echo 5 ;; esac
}
floor_bridge() {
    case $1 in podman | podman-nft) echo "cni-podman0 10.88.1" ;; *) echo "cni0 10.88.1" ;; esac
}
# The links as the list's first plugin leaves them (burst_floor's words):
# bridge's two container sysctls (DAD off, so IPv6's announcements go out
# at once, and a gratuitous ARP as the end comes up) and its port or
# bridge modes; ptp leaves the kernel's defaults.
floor_links() {
    case $1 in
    podman | podman-nft) echo "bridge-sysctls hairpin" ;;
    containerd) echo "bridge-sysctls promisc" ;;
    *) echo "" ;;
    esac
}

# run LIST CASE N ROUND: one burst in a fresh node namespace; its JSON in
# runs/, then the node's leftovers appended to leaks (none expected).
run() {
    local name=$1 case=$2 n=$3 round=$4 prefix="burst$$-$2-$1"
    local file="$out/runs/${n}_${name}_${case}_${round}.json" dir=$reference
    [ "$case" = ours ] && dir="$root/$out/ours"
    list "$name" "$case" > "$out/$case-$name.conflist"
    cat > "$out/node.sh" <<'SH'
set -eu
ip link set lo up
"$cniburst" netns add "$prefix" "$n"
if [ "$case" = floor ]; then
    read -r bridge net <<EOF
$floor
EOF
    # shellcheck disable=SC2086
    "$floor_bin" "$prefix" "$n" "$net" "$bridge" "$rules" $links > "$file"
else
    "$cniburst" burst --conflist "$conflist" --cni-path "$dir" --cache-dir "$cache" \
        --prefix "$prefix" --n "$n" \
        --cap-args '{"portMappings": [{"hostPort": @PORT@, "containerPort": 80, "protocol": "tcp"}]}' > "$file"
fi
"$cniburst" netns del "$prefix" "$n"
left=$(ip -o link show | grep -v -e ': lo:' -e ': cni-podman0:' -e ': cni0:' || true)
[ -z "$left" ] || echo "$case $n: links left: $left" >> "$leaks"
if [ "$case" != floor ]; then
    held=$(find "$ipam" -name '10.*' -o -name '2001:*' | wc -l)
    [ "$held" = 0 ] || echo "$case $n: $held reservations left in $ipam" >> "$leaks"
    cached=$(find "$cache" -type f 2>/dev/null | wc -l)
    [ "$cached" = 0 ] || echo "$case $n: $cached libcni cache entries left in $cache" >> "$leaks"
fi
SH
    cniburst="$root/$out/cniburst" floor_bin="$root/$out/floor" prefix=$prefix n=$n case=$case \
        floor="$(floor_bridge "$name")" rules="$(floor_rules "$name")" links="$(floor_links "$name")" \
        file="$root/$file" \
        conflist="$root/$out/$case-$name.conflist" dir=$dir cache="$state/cache-$case-$name" \
        ipam="$state/ipam-$case-$name" leaks="$root/$out/leaks-$case" \
        unshare --net bash "$out/node.sh"
}

: > "$out/leaks-ours"
: > "$out/leaks-floor"
: > "$out/leaks-reference"
for n in "${sizes[@]}"; do
    for round in $(seq "$rounds"); do
        for name in "${lists[@]}"; do
            cases=(reference ours floor)
            [ "$name" = podman-nft ] && cases=(ours floor)
            [ "$with_floor" = yes ] || cases=("${cases[@]/floor/}")
            for case in ${cases[*]}; do
                run "$name" "$case" "$n" "$round"
            done
        done
    done
done
python3 bench/process/report_burst.py "$out" > "$out/table.md"
cat "$out/table.md"
if [ -s "$out/leaks-reference" ]; then
    echo "burst: the reference left behind (not ours to fix):" >&2
    cat "$out/leaks-reference" >&2
fi
if [ -s "$out/leaks-ours" ] || [ -s "$out/leaks-floor" ]; then
    echo "burst: left behind:" >&2
    cat "$out/leaks-ours" "$out/leaks-floor" >&2
    exit 1
fi
