#!/usr/bin/env bash
# The main job: build the sample plugins and drive them end to end the way a
# container runtime does, through the reference runtime library (libcni, via
# the small Go driver in tests/go/src/cnidriver), printing what each step
# returned.
#
# The network is a configuration list of three plugins:
#   1. noop     stands in for an interface plugin: its debug file makes it
#               report a veth pair and an address;
#   2. dns-mac  the chained sample: puts the runtime's MAC (capability `mac`)
#               on the container interface and merges DNS from its config;
#   3. noop     passes the result through (PASSTHROUGH), recording what it got.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

scripts/install-test-deps.sh >/dev/null
echo "== building the sample plugins (release)"
cargo build --release -p plugins-sample --bins --quiet
echo "== building the runtime driver on the reference libcni"
mkdir -p target/go-bin
GO111MODULE=off GOFLAGS= CGO_ENABLED=0 GOPATH="$root/tests/go:/usr/share/gocode" \
    GOCACHE="${GOCACHE:-$root/target/go-cache}" go build -o target/go-bin/cnidriver cnidriver

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/cache"
ln -s "$root/target/release/noop" "$work/bin/noop"
ln -s "$root/target/release/dns-mac" "$work/bin/dns-mac"
netns=/var/run/netns/demo-container

cat > "$work/interface.json" <<JSON
{"ReportResult": "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"veth1a2b\",\"mac\":\"0a:58:0a:58:00:01\"},{\"name\":\"eth0\",\"sandbox\":\"$netns\"}],\"ips\":[{\"interface\":1,\"address\":\"10.88.0.5/16\",\"gateway\":\"10.88.0.1\"}],\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.88.0.1\"}]}"}
JSON
echo '{"ReportResult": "PASSTHROUGH"}' > "$work/passthrough.json"
cat > "$work/demo.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "demo",
  "plugins": [
    {"type": "noop", "debugFile": "$work/interface.json"},
    {"type": "dns-mac", "capabilities": {"mac": true},
     "dns": {"nameservers": ["10.88.0.53"], "search": ["demo.svc.local"]}},
    {"type": "noop", "debugFile": "$work/passthrough.json"}
  ]
}
JSON

driver() {
    target/go-bin/cnidriver "$1" --conflist "$work/demo.conflist" --cni-path "$work/bin" \
        --cache-dir "$work/cache" --container-id demo-container --netns "$netns" --ifname eth0 \
        --cap-args '{"mac": "c2:11:22:33:44:55"}'
}

status=0
for step in add check del; do
    echo
    echo "== ${step^^} (network demo, container demo-container, eth0)"
    out=$(driver "$step")
    python3 -m json.tool <<<"$out"
    python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["ok"] else 1)' <<<"$out" || status=1
done
echo
echo "== the last plugin recorded this command and arguments"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({"Command": d["Command"], "ContainerID": d["CmdArgs"]["ContainerID"], "IfName": d["CmdArgs"]["IfName"]}))' "$work/passthrough.json"
if [ "$status" -eq 0 ]; then echo "demo: ADD, CHECK and DEL succeeded"; else echo "demo: a step failed" >&2; fi
exit "$status"
