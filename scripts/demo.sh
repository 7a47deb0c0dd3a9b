#!/usr/bin/env bash
# The main job: a real container gets its network from the sample plugins.
#
# Podman 4.3.1 (Debian, CNI backend) runs a busybox container on a network
# made of the sample plugins built as deployed (static, musl), configured
# exactly as the reference plugins are:
#   1. bridge     a host bridge with the gateway address, a veth pair into
#                 the container, addresses and routes from its IPAM plugin,
#                 DNS from the configuration;
#   2. ipam-file  the IPAM plugin (host-local compatible) reserving an
#                 address in 10.215.200.0/24;
#   3. tuning     MTU 1400 and a sysctl on the container's interface.
# The container prints its address, routes and DNS from inside, the host
# pings it; after `podman rm` the script shows that nothing is left: no
# host end of the pair, no reservation, no libcni cache entry, no
# namespace (the bridge, which the reference also keeps for the next
# container, is removed last).
#
# Podman is confined to a temporary directory (its configuration, storage
# and run-time state) with the settings these machines need: runc (crun
# refuses hybrid cgroups), no default ulimits (raising them needs a
# capability the machine may lack), the CNI backend (never netavark).
#
# Then ten pods arrive at once and leave at once on Podman's default list
# (bench/process/burst.sh through Debian's libcni), ours beside the
# reference: each pod's time and the burst's, and nothing left behind.
#
# Where Podman cannot run (not root, not installed, no working runtime) the
# script says why and drives a chain of sample plugins with this project's
# cnitool instead: delegator (IPAM by the reference host-local), dns-mac
# (the `mac` capability) and noop, ADD, CHECK and DEL.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-test-deps.sh >/dev/null
echo "== building the sample plugins and cnitool as deployed (static, musl: scripts/build-static-plugins.sh)"
scripts/build-static-plugins.sh --quiet
bin="$root/target/x86_64-unknown-linux-musl/plugin"

work=$(mktemp -d)
network="cnirs-demo-$$"
bridge="crdemo$$"
podman_cmd() {
    CONTAINERS_CONF="$work/containers.conf" CONTAINERS_STORAGE_CONF="$work/storage.conf" podman "$@"
}
cleanup() {
    if [ -f "$work/containers.conf" ]; then
        podman_cmd rm -a -f -t 0 >/dev/null 2>&1 || true
        rm -f /var/lib/cni/results/"$network"-* 2>/dev/null || true
        ip link del "$bridge" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# Why Podman cannot run here, or nothing.
podman_blocker() {
    [ "$(id -u)" -eq 0 ] || { echo "not running as root (the CNI backend needs root)"; return; }
    for c in podman runc conmon; do
        command -v "$c" >/dev/null 2>&1 || { echo "$c is not installed (scripts/install-test-deps.sh installs it)"; return; }
    done
    [ -x /bin/busybox ] || { echo "busybox-static is not installed"; return; }
}

cnitool_demo() {
    mkdir -p "$work/bin" "$work/net.d"
    for p in delegator dns-mac noop; do ln -s "$bin/$p" "$work/bin/$p"; done
    ln -s /usr/lib/cni/host-local "$work/bin/host-local"
    echo '{"ReportResult": "PASSTHROUGH"}' > "$work/passthrough.json"
    cat > "$work/net.d/10-demo.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "demo",
  "plugins": [
    {"type": "delegator", "requireFamilies": ["4"],
     "ipam": {"type": "host-local", "dataDir": "$work/ipam",
              "ranges": [[{"subnet": "10.88.0.0/24", "gateway": "10.88.0.1"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "dns-mac", "capabilities": {"mac": true},
     "dns": {"nameservers": ["10.88.0.53"], "search": ["demo.svc.local"]}},
    {"type": "noop", "debugFile": "$work/passthrough.json"}
  ]
}
JSON
    export NETCONFPATH="$work/net.d" CNI_PATH="$work/bin" CAP_ARGS='{"mac": "c2:11:22:33:44:55"}'
    cnitool() { "$bin/cnitool" --cache-dir "$work/cache" "$@"; }
    local netns=/var/run/netns/demo-container
    echo
    echo "== cnitool add demo $netns"
    cnitool add demo "$netns"
    echo "== host-local reserved: $(ls "$work/ipam/demo" | grep -v -e lock -e last_reserved | tr '\n' ' ')"
    echo
    echo "== cnitool check demo $netns"
    cnitool check demo "$netns" && echo "(CHECK passed: every plugin confirmed the cached result)"
    echo
    echo "== cnitool del demo $netns"
    cnitool del demo "$netns" && echo "(DEL done)"
    echo "== host-local reservations left: $(ls "$work/ipam/demo" | grep -v -e lock -e last_reserved | wc -l)"
    echo
    echo "== the last plugin recorded: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["Command"], d["CmdArgs"]["ContainerID"], d["CmdArgs"]["IfName"])' "$work/passthrough.json")"
    echo "demo: ADD, CHECK and DEL succeeded"
}

podman_demo() {
    mkdir -p "$work/net.d" "$work/storage" "$work/run" "$work/tmp" "$work/ipam" "$work/rootfs/bin"
    cat > "$work/containers.conf" <<CONF
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$work/tmp"
[network]
network_backend = "cni"
cni_plugin_dirs = ["$bin"]
network_config_dir = "$work/net.d"
CONF
    printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' \
        "$work/storage" "$work/run" > "$work/storage.conf"
    cp /bin/busybox "$work/rootfs/bin/busybox"
    for a in sh ip cat sleep; do ln -s busybox "$work/rootfs/bin/$a"; done
    mkdir -p "$work/rootfs/"{etc,proc,sys,dev,tmp,run}
    cat > "$work/net.d/$network.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "$network",
  "plugins": [
    {"type": "bridge", "bridge": "$bridge", "isGateway": true,
     "dns": {"nameservers": ["10.215.200.53"], "search": ["demo.svc.local"]},
     "ipam": {"type": "ipam-file", "dataDir": "$work/ipam",
              "ranges": [[{"subnet": "10.215.200.0/24"}]],
              "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "tuning", "mtu": 1400, "dataDir": "$work/tuning",
     "sysctl": {"net.ipv4.conf.IFNAME.arp_notify": "1"}}
  ]
}
JSON
    echo
    echo "== $work/net.d/$network.conflist"
    cat "$work/net.d/$network.conflist"
    echo
    echo "== podman run -d --network $network --rootfs <busybox> sleep 600"
    local id netns peer
    if ! id=$(podman_cmd run -d --network "$network" --rootfs "$work/rootfs" sleep 600 2>"$work/podman.err"); then
        echo
        echo "== Podman cannot start a container here: $(tail -n 1 "$work/podman.err"); driving the plugins with cnitool instead"
        cnitool_demo
        return
    fi
    netns=$(podman_cmd inspect --format '{{.NetworkSettings.SandboxKey}}' "$id")
    peer=$(podman_cmd exec "$id" cat /sys/class/net/eth0/iflink)
    echo "container ${id:0:12}, namespace $netns, host end of the pair: $(ip -o link show | awk -F': ' -v i="$peer" '$1 == i {sub(/@.*/, "", $2); print $2}')"
    echo
    echo "== from inside the container: ip addr show eth0; ip route; cat /etc/resolv.conf"
    podman_cmd exec "$id" sh -c 'ip addr show eth0; echo; ip route; echo; cat /etc/resolv.conf'
    echo
    local addr
    addr=$(podman_cmd inspect --format "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$id")
    echo
    echo "== from the host: ping -c1 $addr (through the bridge $bridge)"
    ping -c1 -W2 "$addr" | sed -n 2p
    echo
    echo "== ipam-file reserved: $(ls "$work/ipam/$network" | grep -v -e lock -e last_reserved | tr '\n' ' ')"
    echo "== libcni cached: $(ls /var/lib/cni/results | grep -c "^$network-") result(s)"
    echo
    echo "== podman rm -f ${id:0:12}"
    podman_cmd rm -f -t 0 "$id" >/dev/null
    local left=()
    ip -o link show | awk -F': ' '{print $1}' | grep -qx "$peer" && left+=("host link #$peer")
    [ -z "$(ls "$work/ipam/$network" | grep -v -e lock -e last_reserved)" ] || left+=("a reservation")
    ls /var/lib/cni/results | grep -q "^$network-" && left+=("a libcni cache entry")
    [ ! -e "$netns" ] || left+=("namespace $netns")
    [ -z "$(ip -o link show master "$bridge")" ] || left+=("a port of $bridge")
    [ -z "$(ls -A "$work/tuning" 2>/dev/null)" ] || left+=("a tuning backup")
    if [ "${#left[@]}" -ne 0 ]; then
        echo "demo: left behind: ${left[*]}" >&2
        exit 1
    fi
    echo "nothing left: no host end of the pair, no reservation, no libcni cache entry, no tuning backup, no namespace"
    ip link del "$bridge"
    echo "demo: a Podman container got its network from the sample plugins"
}

blocker=$(podman_blocker)
if [ -z "$blocker" ]; then
    podman_demo
else
    echo
    echo "== Podman cannot run here: $blocker; driving the plugins with cnitool instead"
    cnitool_demo
fi

# A node's burst: ten pods arriving at once, then leaving at once, on
# Podman's default list, ours beside the reference, through Debian's
# libcni; burst.sh fails if anything of ours is left behind.
echo
echo "== a burst: ten pods at once on Podman's default list (bridge, host-local, portmap, firewall, tuning), ours beside the reference, through libcni (bench/process/burst.sh)"
BURST_LISTS=podman BURST_FLOOR=no BURST_BINS="$bin" bench/process/burst.sh 1 10
echo "demo: ten pods came and went at once; nothing of theirs is left (links, reservations, libcni cache entries)"
