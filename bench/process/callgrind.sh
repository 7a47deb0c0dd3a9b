#!/usr/bin/env bash
# Instructions per execution (valgrind --tool=callgrind, user space, the
# same on any load) and stripped size of noop binaries, for VERSION and for
# the ADD of bench/process/run.sh (1.0.0, runtimeConfig and prevResult,
# debug file PASSTHROUGH). Compares builds side by side, e.g. before and
# after a change:
#
#   bench/process/callgrind.sh before/noop after/noop
#
# Build each as deployed: scripts/build-static-plugins.sh -p plugins-sample --bin noop
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 NOOP..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" "$(dirname "$0")/../fixtures/config-1.0.0.json" <<'PY'
import json, sys
work, fixture = sys.argv[1], sys.argv[2]
conf = json.load(open(fixture))
conf.update({"type": "noop", "debugFile": f"{work}/debug.json"})
open(f"{work}/add.json", "w").write(json.dumps(conf))
open(f"{work}/version.json", "w").write('{"cniVersion":"1.0.0"}')
PY
# One execution under callgrind; prints its instruction count.
count() {
    local bin=$1 stdin=$2
    shift 2
    printf '{"ReportResult":"PASSTHROUGH"}' > "$work/debug.json"
    env -i PATH=/usr/bin:/bin "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$bin" < "$stdin" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '%-40s %10s %12s %12s\n' binary bytes VERSION ADD
for bin in "$@"; do
    version=$(count "$bin" "$work/version.json" CNI_COMMAND=VERSION)
    add=$(count "$bin" "$work/add.json" CNI_COMMAND=ADD CNI_CONTAINERID=bench-container \
        CNI_NETNS=/var/run/netns/bench-does-not-exist CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin)
    printf '%-40s %10s %12s %12s\n' "$bin" "$(stat -c %s "$bin")" "$version" "$add"
done
