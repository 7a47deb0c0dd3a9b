#!/bin/sh
# CONCURRENT-ADD: allocation looks for a free address, then takes it (slowly): not atomic.
. "$(dirname "$0")/good.sh"
allocate() {
    mkdir -p "$datadir/ips" "$datadir/att"
    n=2
    while [ -d "$datadir/ips/$n" ]; do
        n=$((n + 1))
    done
    sleep 0.3
    mkdir -p "$datadir/ips/$n"
    echo "$n" >"$(attachment)"
}
main
