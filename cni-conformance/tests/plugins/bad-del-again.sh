#!/bin/sh
# DEL-AGAIN: a DEL of an attachment it does not hold fails with code 3.
. "$(dirname "$0")/good.sh"
cmd_del() {
    [ -f "$(attachment)" ] || fail 3 "$CNI_CONTAINERID/$CNI_IFNAME is not added"
    release
}
main
