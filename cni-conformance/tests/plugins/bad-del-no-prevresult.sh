#!/bin/sh
# DEL-NO-PREVRESULT: from 0.4.0 on, refuses a DEL without prevResult.
. "$(dirname "$0")/good.sh"
cmd_del() {
    if layout_ips && [ "$version" != 0.3.0 ] && [ "$version" != 0.3.1 ] && [ "$has_prev" != true ]; then
        fail 7 "prevResult is required"
    fi
    release
}
main
