#!/bin/sh
# GC-KEEPS-VALID: GC releases every attachment, listed or not.
. "$(dirname "$0")/good.sh"
cmd_gc() {
    rm -rf "$datadir/att" "$datadir/ips"
}
main
