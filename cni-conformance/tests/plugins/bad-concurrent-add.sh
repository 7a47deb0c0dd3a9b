#!/bin/sh
# CONCURRENT-ADD: allocation looks for a free address, then takes it: not
# atomic. The concurrent ADDs (containers cnic-par-*) wait for a second
# one to have looked before taking theirs, so two always take the same
# address, however the scheduler spreads them; any other ADD runs alone.
. "$(dirname "$0")/good.sh"
allocate() {
    mkdir -p "$datadir/ips" "$datadir/att" "$datadir/looked"
    n=2
    while [ -d "$datadir/ips/$n" ]; do
        n=$((n + 1))
    done
    case "${CNI_CONTAINERID:-}" in
    cnic-par-*)
        touch "$datadir/looked/$CNI_CONTAINERID"
        while [ "$(ls "$datadir/looked" | wc -l)" -lt 2 ]; do
            sleep 0.01
        done
        ;;
    esac
    mkdir -p "$datadir/ips/$n"
    echo "$n" >"$(attachment)"
}
main
