#!/bin/sh
# ADD-SUCCEEDS: lists 0.4.0 but its ADD fails for it.
. "$(dirname "$0")/good.sh"
cmd_add() {
    [ "$version" = 0.4.0 ] && fail 999 "ADD is not implemented for 0.4.0"
    [ -f "$(attachment)" ] && fail 7 "$CNI_CONTAINERID/$CNI_IFNAME is already added"
    allocate
    result "$n"
}
main
