#!/bin/sh
# GC-KEEPS-VALID, caught without CHECK's help: GC releases every attachment,
# and CHECK verifies nothing, so only the address a new ADD gets shows it.
. "$(dirname "$0")/good.sh"
cmd_gc() {
    rm -rf "$datadir/att" "$datadir/ips"
}
cmd_check() {
    case "$version" in
        0.1.* | 0.2.* | 0.3.*) fail 1 "CHECK needs cniVersion 0.4.0 or later" ;;
    esac
}
main
