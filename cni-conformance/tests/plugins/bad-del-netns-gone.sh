#!/bin/sh
# DEL-NETNS-GONE (SHOULD): DEL fails when the namespace no longer exists.
. "$(dirname "$0")/good.sh"
cmd_del() {
    [ -z "${CNI_NETNS:-}" ] || [ -e "$CNI_NETNS" ] || fail 8 "$CNI_NETNS does not exist"
    release
}
main
