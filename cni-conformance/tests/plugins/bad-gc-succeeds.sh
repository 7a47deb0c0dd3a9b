#!/bin/sh
# GC-SUCCEEDS (SHOULD): GC is not implemented and says so.
. "$(dirname "$0")/good.sh"
cmd_gc() {
    fail 999 "GC is not implemented"
}
main
