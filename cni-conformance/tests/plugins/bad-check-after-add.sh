#!/bin/sh
# CHECK-AFTER-ADD: CHECK fails for 0.4.0 (it misreads that prevResult).
. "$(dirname "$0")/good.sh"
cmd_check() {
    case "$version" in
        0.1.* | 0.2.* | 0.3.*) fail 1 "CHECK needs cniVersion 0.4.0 or later" ;;
        0.4.0) fail 999 "cannot read prevResult" ;;
    esac
    [ -f "$(attachment)" ] || fail 3 "$CNI_CONTAINERID/$CNI_IFNAME is not added"
}
main
