#!/bin/sh
# STATUS-REPLY: STATUS fails with code 999, not 50 or 51.
. "$(dirname "$0")/good.sh"
cmd_status() {
    fail 999 "status unknown"
}
main
