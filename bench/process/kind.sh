#!/usr/bin/env bash
# kind's chain benchmark: the network list kindnet writes (ptp with ipMasq
# false and mtu 1500, host-local, portmap with the portMappings
# capability; cniVersion 0.3.1), run as libcni runs a list: ADD ptp then
# portmap with ptp's result as prevResult, DEL portmap then ptp (no
# prevResult at 0.3.1), one host port (tcp 8080 -> 80), into a fresh
# network namespace each round. Three cases interleaved per round by
# bench/process/netns_harness.c: Debian's reference plugins
# (/usr/lib/cni), ours with the default backend (no `backend` key: the
# probe picks iptables), ours with `"backend": "nftables"`. Then growth:
# ours with nftables again, empty and with 1,000 pods' mappings already
# in the tables (one `nft -f` batch, in the harness's host namespace,
# before the first round), in alternating blocks of rounds (KIND_BLOCKS,
# default 5), so that the machine's drift between runs falls on both.
#
# usage: bench/process/kind.sh [ROUNDS]   (default 220: 20 warm-up + 200;
#        under 100 rounds, none is a warm-up: CI runs it with 3 to check it
#        still builds and runs, not to measure). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/process/chain.sh
chain_rounds "${1:-}"
out=target/bench/kind
chain_prepare "$out" "${KIND_BENCH_NO_BUILD:-}" ptp host-local portmap
chain_netns "cni-rs-bench-kind-$$"
# case name, plugin directory, portmap's extra keys, subnet (each case its
# own, and its own IPAM directory)
cases=(
    "reference $reference - 10.217.1.0/24"
    "ours-iptables $root/$out/ours - 10.217.2.0/24"
    "ours-nftables $root/$out/ours ,\"backend\":\"nftables\" 10.217.3.0/24"
)
specs=()
for entry in "${cases[@]}"; do
    read -r name dir extra subnet <<<"$entry"
    [ "$extra" = - ] && extra=
    mkdir -p "$out/$name-ipam"
    cat > "$out/$name-ptp.json" <<JSON
{"cniVersion": "0.3.1", "name": "kindnet", "type": "ptp", "ipMasq": false, "mtu": 1500,
 "ipam": {"type": "host-local", "dataDir": "$root/$out/$name-ipam",
          "routes": [{"dst": "0.0.0.0/0"}], "ranges": [[{"subnet": "$subnet"}]]}}
JSON
    # What libcni gives portmap: the capability's runtimeConfig injected,
    # then the previous result (the harness's marker).
    cat > "$out/$name-portmap.json" <<JSON
{"cniVersion": "0.3.1", "name": "kindnet", "type": "portmap", "capabilities": {"portMappings": true}$extra,
 "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}@PREV@}
JSON
    chain_env "$out/$name" "$dir" "bench-$name"
    specs+=("$dir/ptp,$dir/portmap:$out/$name-ptp.json,$out/$name-portmap.json:$out/$name-ADD.env:$out/$name-DEL.env")
done
"$out/netns_harness" "${settle[@]}" "$rounds" "$netns" "${specs[@]}" > "$out/samples"

# 1,000 other pods' mappings, laid out as our (and the reference's)
# nftables portmap lays them: one DNAT rule and two masquerading rules per
# pod, each commented with a 64-hex container ID.
python3 - "$out/prefill.nft" <<'PY'
import hashlib, sys
lines = ['table ip cni_hostport {', '  comment "CNI portmap plugin"',
         '  chain hostports {']
pods = [(hashlib.sha256(f"prefill-{i}".encode()).hexdigest(), f"10.218.{i // 250}.{i % 250 + 2}", 20000 + i)
        for i in range(1000)]
lines += [f'    tcp dport {port} dnat to {ip}:80 comment "{cid}"' for cid, ip, port in pods]
lines += ['  }', '  chain hostip_hostports {', '  }',
          '  chain hostports_all {', '    jump hostip_hostports', '    jump hostports', '  }',
          '  chain prerouting {', '    type nat hook prerouting priority -100;',
          '    fib daddr type local jump hostports_all', '  }',
          '  chain output {', '    type nat hook output priority -100;',
          '    fib daddr type local jump hostports_all', '  }',
          '  chain masquerading {', '    type nat hook postrouting priority 100;']
for cid, ip, _ in pods:
    lines.append(f'    ip saddr {ip} ip daddr {ip} masquerade comment "{cid}"')
    lines.append(f'    ip saddr 127.0.0.1 ip daddr {ip} masquerade comment "{cid}"')
lines += ['  }', '}']
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
# Each block a harness run of its own, in a host namespace of its own;
# the empty node's blocks alternate with the full node's.
blocks=${KIND_BLOCKS:-5}
per_block=$(( (rounds + blocks - 1) / blocks ))
rm -f "$out"/samples-empty.* "$out"/samples-grown.*
for block in $(seq "$blocks"); do
    "$out/netns_harness" "${settle[@]}" "$per_block" "$netns" "${specs[2]}" > "$out/samples-empty.$block"
    "$out/netns_harness" --setup "nft -f $root/$out/prefill.nft && test \$(nft -a list table ip cni_hostport | grep -c comment) = 3001" \
        "${settle[@]}" "$per_block" "$netns" "${specs[2]}" > "$out/samples-grown.$block"
done
python3 bench/process/report_kind.py "$out" "$warmup"
