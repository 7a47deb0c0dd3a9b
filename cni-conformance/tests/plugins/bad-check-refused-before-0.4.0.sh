#!/bin/sh
# CHECK-REFUSED-BEFORE-0.4.0: runs CHECK for any version.
. "$(dirname "$0")/good.sh"
cmd_check() {
    [ -f "$(attachment)" ] || fail 3 "$CNI_CONTAINERID/$CNI_IFNAME is not added"
}
main
