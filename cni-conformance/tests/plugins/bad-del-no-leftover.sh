#!/bin/sh
# DEL-NO-LEFTOVER (SHOULD): DEL renames the interface aside instead of deleting it.
. "$(dirname "$0")/good.sh"
remove_link() {
    [ -e "$CNI_NETNS" ] || return 0
    ip -n "$(netns_name)" link set "$CNI_IFNAME" name "old$$" 2>/dev/null
    ip -n "$(netns_name)" link set "${CNI_IFNAME}h" name "old$$h" 2>/dev/null
    return 0
}
main
