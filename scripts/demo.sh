#!/usr/bin/env bash
# The main job: what a node does, on the sample plugins built as deployed
# (static, musl), through a real container engine nobody here wrote.
#
# Podman 4.3.1 (Debian, CNI backend) runs its own default network,
# `podman` (bridge cni-podman0, 10.88.0.0/16): the list Podman generates
# itself, unedited, the one `podman network create` writes (cniVersion
# 0.4.0: bridge with isGateway, ipMasq and hairpinMode, host-local,
# portmap, firewall, tuning). The script prints that list as libcni ran
# it (from libcni's cache), then:
#   1. a busybox httpd container with a published port (`podman run -p
#      127.0.0.1:PORT:80 -p 10.215.201.1:PORT:80`), fetched from the host
#      at 127.0.0.1 and from a network namespace of the script's own
#      (10.215.201.2, behind a veth whose host end is 10.215.201.1), never
#      through a public interface; the container shows its address and
#      routes from inside; after `podman rm` nothing of it is left;
#   2. a burst: ten containers started at once (`podman run -d`, each with
#      a published port on 127.0.0.1 and an httpd answering on it), then
#      removed at once, first on our plugins, then on the reference plugins
#      (Debian's, /usr/lib/cni) by switching Podman's `cni_plugin_dirs`;
#      a table gives each container's `podman run -d` and `podman rm`
#      times and its network setup (from its namespace's creation to
#      libcni's cached result: the whole list's ADD), ours beside the
#      reference's.
# After every removal the script checks that nothing is left: no host end
# of a veth, no host-local reservation, no libcni cache entry, no
# iptables/nftables rule or chain naming the container (its id, the hash
# its chains are named after, its address), no namespace. The bridge and
# the host-local directory, which the reference keeps for the next
# container, are removed at the end when the script made them.
#
# Podman is confined to a temporary directory (its configuration, storage
# and run-time state) with the settings these machines need: runc (crun
# refuses hybrid cgroups), no default ulimits (raising them needs a
# capability the machine may lack), the CNI backend (never netavark). What
# Podman keeps at fixed paths (/var/lib/cni, /run/netns) is cleaned for
# the script's containers on exit, also on failure. Every Podman command
# has a deadline (`timeout 120`), every fetch one of 5 s.
#
# Where Podman cannot run (not root, not installed, no working runtime, its
# default network's bridge or subnet already in use on this host) the
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
reference=/usr/lib/cni

work=$(mktemp -d)
bridge=cni-podman0
ipam_dir=/var/lib/cni/networks/podman
outside="cnirs-demo-$$"
outside_link="crdemo$$"
outside_host=10.215.201.1
outside_addr=10.215.201.2
made_bridge=no
made_ipam=no

# `podman ARGS...` with the plugins of WHICH (ours or reference), bounded.
podman_as() {
    local which=$1
    shift
    CONTAINERS_CONF="$work/$which.conf" CONTAINERS_STORAGE_CONF="$work/storage.conf" \
        timeout 120 podman "$@"
}
cleanup() {
    set +e
    if [ -f "$work/ours.conf" ]; then
        local id
        for id in $(podman_as ours ps -aq --no-trunc 2>/dev/null); do
            podman_as ours rm -f -t 0 "$id" >/dev/null 2>&1
            rm -f /var/lib/cni/results/podman-"$id"-* 2>/dev/null
        done
    fi
    ip netns del "$outside" 2>/dev/null
    ip link del "$outside_link" 2>/dev/null
    [ "$made_bridge" = no ] || ip link del "$bridge" 2>/dev/null
    [ "$made_ipam" = no ] || rm -rf "$ipam_dir"
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
    ! ip link show "$bridge" >/dev/null 2>&1 ||
        { echo "Podman's default bridge $bridge already exists on this host"; return; }
    ! ip -4 route | grep -qE '^10\.88\.|^10\.215\.201\.' ||
        { echo "a host route uses Podman's default subnet 10.88.0.0/16 or the demo's 10.215.201.0/30"; return; }
    ! ls "$ipam_dir" 2>/dev/null | grep -qv -e '^lock$' -e '^last_reserved_ip' ||
        { echo "$ipam_dir holds reservations of another Podman"; return; }
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

# What libcni cached for each container ID on stdin, one line each: the id,
# its namespace, the host end of its veth, its address, and its network
# setup in ms (the cache file's mtime less the namespace's creation time,
# the nsfs inode's).
container_records() {
    python3 -c '
import json, os, sys
for cid in sys.stdin.read().split():
    path = "/var/lib/cni/results/podman-%s-eth0" % cid
    result = json.load(open(path))["result"]
    netns = next(i["sandbox"] for i in result["interfaces"] if i.get("sandbox"))
    veth = next(i["name"] for i in result["interfaces"]
                if not i.get("sandbox") and i["name"] != sys.argv[1])
    addr = result["ips"][0]["address"].split("/")[0]
    setup = (os.stat(path).st_mtime_ns - os.stat(netns).st_mtime_ns) / 1e6
    print(cid, netns, veth, addr, "%.0f" % setup)
' "$bridge"
}

# What is left of the containers in the records file $1 after their
# removal; nothing when all is gone.
left_of() {
    local rules id netns veth addr hash
    rules=$({ iptables-save; ip6tables-save; nft list ruleset; } 2>/dev/null)
    while read -r id netns veth addr _; do
        hash=$(printf 'podman%s' "$id" | sha512sum | cut -c1-21)
        ! ip link show "$veth" >/dev/null 2>&1 || echo "host link $veth of ${id:0:12}"
        [ ! -e "$ipam_dir/$addr" ] || echo "reservation $addr of ${id:0:12}"
        ! ls /var/lib/cni/results/podman-"$id"-* >/dev/null 2>&1 || echo "libcni cache entry of ${id:0:12}"
        ! grep -q -e "$id" -e "$hash" <<<"$rules" || echo "a rule or chain naming ${id:0:12}"
        ! grep -qE "(^|[^0-9.])${addr//./\\.}([^0-9.]|$)" <<<"$rules" || echo "a rule naming $addr"
        [ ! -e "$netns" ] || echo "namespace $netns"
    done <"$1"
}

# Fails the demo when anything of the containers in $1 is left.
check_nothing_left() {
    local left
    left=$(left_of "$1")
    if [ -n "$left" ]; then
        echo "demo: left behind:" >&2
        echo "$left" >&2
        exit 1
    fi
}

# What a GET of / from ADDR PORT reads (the body's last line); in the
# namespace $3 when given. Bounded by 5 s.
fetch() {
    local run=()
    [ -z "${3:-}" ] || run=(ip netns exec "$3")
    printf 'GET / HTTP/1.0\r\n\r\n' | "${run[@]}" timeout 5 /bin/busybox nc "$1" "$2" 2>/dev/null | tail -n 1
}

# Waits (at most 10 s) until 127.0.0.1:$1 answers with the page.
wait_served() {
    local i
    for i in $(seq 100); do
        [ "$(fetch 127.0.0.1 "$1")" != "$page" ] || return 0
        sleep 0.1
    done
    echo "demo: nothing answers on 127.0.0.1:$1" >&2
    return 1
}

# Succeeds when no TCP socket of the host, in any state, holds a port in
# [$1, $1 + 9].
free_ports() {
    local base=$1 p
    for p in $(seq "$base" $((base + 9))); do
        [ -z "$(ss -Htan "sport = :$p")" ] || return 1
    done
}

# A base for thirty ports (twenty published, ten spare) outside the
# kernel's ephemeral range (net.ipv4.ip_local_port_range): a port in that
# range may be the local end of any connection of the host, and Podman's
# bind of it then fails with "address already in use" (a CI run lost a
# burst that way).
published_ports_base() {
    local low high span
    read -r low high </proc/sys/net/ipv4/ip_local_port_range
    if [ $((low - 1024)) -ge 40 ]; then
        span=$(((low - 1024 - 30) / 10))
        [ "$span" -le 800 ] || span=800
        echo $((low - 30 - $$ % span * 10))
    elif [ $((65535 - high)) -ge 40 ]; then
        span=$(((65535 - high - 30) / 10))
        [ "$span" -le 800 ] || span=800
        echo $((high + 1 + $$ % span * 10))
    else
        echo "demo: no room for 30 ports outside the ephemeral range $low-$high" >&2
        return 1
    fi
}

# Ten containers at once with the plugins of $1, then removed at once.
# Writes $work/burst-$1/records (container_records, plus the `podman run
# -d` and `podman rm` ms of each) and fails if any fails or leaves
# anything.
burst() {
    local which=$1 dir="$work/burst-$1" i pids=() failed=0
    mkdir -p "$dir"
    for i in $(seq 0 9); do
        (
            s=$(date +%s%N)
            id=$(podman_as "$which" run -d -p "127.0.0.1:$((burst_port + i)):80" \
                --rootfs "$work/rootfs" httpd -f -p 80 -h /www)
            echo "$id $(( ($(date +%s%N) - s) / 1000000 ))" >"$dir/run.$i"
        ) 2>"$dir/err.$i" &
        pids+=("$!")
    done
    for i in "${pids[@]}"; do wait "$i" || failed=1; done
    if [ "$failed" -ne 0 ]; then
        echo "demo: a podman run -d of the burst failed: $(cat "$dir"/err.*)" >&2
        exit 1
    fi
    cat "$dir"/run.* | awk '{print $1}' | container_records >"$dir/records"
    for i in $(seq 0 9); do wait_served $((burst_port + i)); done
    pids=()
    for i in $(seq 0 9); do
        (
            id=$(awk '{print $1}' "$dir/run.$i")
            s=$(date +%s%N)
            podman_as "$which" rm -f -t 0 "$id" >/dev/null
            echo "$id $(( ($(date +%s%N) - s) / 1000000 ))" >"$dir/rm.$i"
        ) 2>"$dir/err.$i" &
        pids+=("$!")
    done
    for i in "${pids[@]}"; do wait "$i" || failed=1; done
    if [ "$failed" -ne 0 ]; then
        echo "demo: a podman rm of the burst failed: $(cat "$dir"/err.*)" >&2
        exit 1
    fi
    check_nothing_left "$dir/records"
    # id netns veth addr setup_ms run_ms rm_ms
    join <(sort "$dir/records") <(cat "$dir"/run.* | sort) |
        join - <(cat "$dir"/rm.* | sort) >"$dir/timed"
}

# The burst's table: ours beside the reference, per container and overall.
burst_table() {
    python3 - "$work/burst-ours/timed" "$work/burst-reference/timed" <<'PY'
import statistics, sys
def load(path):
    rows = [line.split() for line in open(path)]
    return [(int(r[5]), int(r[4]), int(r[6]), r[3]) for r in rows]
ours, ref = load(sys.argv[1]), load(sys.argv[2])
print("%-10s | %27s | %27s" % ("", "ours (ms)", "reference (ms)"))
print("%-10s | %8s %9s %8s | %8s %9s %8s" % ("container", "run -d", "network", "rm", "run -d", "network", "rm"))
for i, (o, r) in enumerate(zip(sorted(ours, key=lambda x: x[0]), sorted(ref, key=lambda x: x[0]))):
    print("%-10s | %8d %9d %8d | %8d %9d %8d" % (i + 1, o[0], o[1], o[2], r[0], r[1], r[2]))
for name, f in (("p50", statistics.median), ("max", max)):
    o = [f([x[k] for x in ours]) for k in range(3)]
    r = [f([x[k] for x in ref]) for k in range(3)]
    print("%-10s | %8d %9d %8d | %8d %9d %8d" % (name, *o, *r))
print("(rows sorted by run -d time; run -d and rm: each `podman run -d` and `podman rm -f` as a user waits")
print(" for it, ten at once, their maximum the burst's makespan; network: from the container's namespace")
print(" being made to libcni's cached result, the whole list's ADD)")
PY
}

podman_demo() {
    mkdir -p "$work/net.d" "$work/storage" "$work/run" "$work/tmp" "$work/rootfs/bin" "$work/rootfs/www"
    local which
    for which in ours reference; do
        cat >"$work/$which.conf" <<CONF
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$work/tmp"
[network]
network_backend = "cni"
cni_plugin_dirs = ["$([ "$which" = ours ] && echo "$bin" || echo "$reference")"]
network_config_dir = "$work/net.d"
CONF
    done
    printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' \
        "$work/storage" "$work/run" >"$work/storage.conf"
    cp /bin/busybox "$work/rootfs/bin/busybox"
    for a in sh ip cat sleep httpd; do ln -s busybox "$work/rootfs/bin/$a"; done
    mkdir -p "$work/rootfs/"{etc,proc,sys,dev,tmp,run}
    page="hello from a Podman container on cni-rs plugins"
    echo "$page" >"$work/rootfs/www/index.html"

    # A namespace of the script's own: the far side of a veth to the host.
    ip netns add "$outside"
    ip link add "$outside_link" type veth peer name eth0 netns "$outside"
    ip addr add "$outside_host/30" dev "$outside_link"
    ip link set "$outside_link" up
    ip -n "$outside" addr add "$outside_addr/30" dev eth0
    ip -n "$outside" link set eth0 up
    ip -n "$outside" link set lo up
    ip -n "$outside" route add default via "$outside_host"

    local port id
    port=$(published_ports_base)
    free_ports "$port" || port=$((port + 10))
    burst_port=$((port + 10))
    free_ports "$port" && free_ports "$burst_port" || {
        echo "demo: ports $port-$((burst_port + 9)) are in use" >&2
        exit 1
    }
    [ -d "$ipam_dir" ] || made_ipam=yes
    made_bridge=yes
    echo
    echo "== podman run -d -p 127.0.0.1:$port:80 -p $outside_host:$port:80 --rootfs <busybox> httpd -f -p 80 -h /www"
    echo "   (Podman's default network \`podman\`; plugins: $bin)"
    if ! id=$(podman_as ours run -d -p "127.0.0.1:$port:80" -p "$outside_host:$port:80" \
        --rootfs "$work/rootfs" httpd -f -p 80 -h /www 2>"$work/podman.err"); then
        echo
        echo "== Podman cannot start a container here: $(tail -n 1 "$work/podman.err"); driving the plugins with cnitool instead"
        cnitool_demo
        return
    fi
    echo "$id" | container_records >"$work/single"
    local netns veth addr setup
    read -r _ netns veth addr setup <"$work/single"
    echo "container ${id:0:12}: namespace $netns, address $addr, host end of its veth $veth on $bridge"
    echo
    echo "== the list libcni ran (Podman's own, from libcni's cache /var/lib/cni/results/podman-${id:0:12}...-eth0)"
    python3 -c 'import base64, json, sys; print(base64.b64decode(json.load(open(sys.argv[1]))["config"]).decode())' \
        /var/lib/cni/results/podman-"$id"-eth0
    echo
    echo "== from inside the container: ip addr show eth0; ip route"
    podman_as ours exec "$id" sh -c 'ip addr show eth0; echo; ip route'
    wait_served "$port"
    echo
    echo "== from the host: GET http://127.0.0.1:$port/ (portmap's DNAT to $addr:80)"
    local got
    got=$(fetch 127.0.0.1 "$port")
    echo "$got"
    [ "$got" = "$page" ] || { echo "demo: 127.0.0.1:$port did not serve the page" >&2; exit 1; }
    echo
    echo "== from the namespace $outside ($outside_addr): GET http://$outside_host:$port/"
    got=$(fetch "$outside_host" "$port" "$outside")
    echo "$got"
    [ "$got" = "$page" ] || { echo "demo: $outside_host:$port did not serve the page to $outside" >&2; exit 1; }
    echo
    echo "== host-local reserved: $(ls "$ipam_dir" | grep -v -e lock -e last_reserved | tr '\n' ' ')"
    echo "== rules naming the container: $({ iptables-save; nft list ruleset; } 2>/dev/null | grep -c -e "$id" -e "$(printf 'podman%s' "$id" | sha512sum | cut -c1-21)")"
    echo
    echo "== podman rm -f ${id:0:12}"
    podman_as ours rm -f -t 0 "$id" >/dev/null
    check_nothing_left "$work/single"
    [ -z "$(fetch 127.0.0.1 "$port")" ] || { echo "demo: 127.0.0.1:$port still answers" >&2; exit 1; }
    echo "nothing left: no host end of the veth, reservation, libcni cache entry, rule or chain naming it, namespace; the port no longer answers"

    echo
    echo "== a burst: ten containers at once (podman run -d -p 127.0.0.1:$burst_port..$((burst_port + 9)):80 ... httpd), then podman rm of all ten at once;"
    echo "   ours ($bin), then the reference's ($reference), switching Podman's cni_plugin_dirs"
    burst ours
    burst reference
    burst_table
    echo "each of the twenty served its page on its published port; after the removals nothing of any is left"

    [ -z "$(ip -o link show master "$bridge")" ] || { echo "demo: ports of $bridge left" >&2; exit 1; }
    ip link del "$bridge"
    made_bridge=no
    if [ "$made_ipam" = yes ]; then
        rm -rf "$ipam_dir"
        made_ipam=no
    fi
    echo "demo: Podman's default network ran on the sample plugins: a published port, a burst of ten, nothing left"
}

blocker=$(podman_blocker)
if [ -z "$blocker" ]; then
    podman_demo
else
    echo
    echo "== Podman cannot run here: $blocker; driving the plugins with cnitool instead"
    cnitool_demo
fi
