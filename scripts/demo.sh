#!/usr/bin/env bash
# The main job: build the sample plugins and drive them end to end the way a
# container runtime does, with this project's cnitool, printing
# what each step returned.
#
# The network "demo" is a configuration list of three plugins:
#   1. delegator  an interface-plugin skeleton: delegates address management
#                 to the reference host-local IPAM plugin (Debian's
#                 containernetworking-plugins) and reports the container
#                 interface;
#   2. dns-mac    the chained sample: puts the runtime's MAC (capability
#                 `mac`, from CAP_ARGS) on that interface, merges DNS;
#   3. noop       passes the result through (PASSTHROUGH), recording what it
#                 received in its debug file.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-test-deps.sh >/dev/null
echo "== building the sample plugins and cnitool as deployed (static, musl: scripts/build-static-plugins.sh)"
scripts/build-static-plugins.sh --quiet
bin="$root/target/x86_64-unknown-linux-musl/plugin"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
netns=/var/run/netns/demo-container

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
