#!/bin/sh
# DEL-SUCCEEDS: releases, then fails, when DEL carries prevResult.
. "$(dirname "$0")/good.sh"
cmd_del() {
    if [ "$has_prev" = true ] && [ -f "$(attachment)" ]; then
        release
        fail 999 "cannot parse prevResult"
    fi
    release
}
main
