#!/bin/sh
# ADD-IFNAME: names the container interface net0, whatever CNI_IFNAME says.
. "$(dirname "$0")/good.sh"
make_link() {
    if ! ip -n "$(netns_name)" link add net0 type veth peer name net0h 2>/dev/null; then
        release
        fail 101 "cannot create net0 in $CNI_NETNS (it may exist)"
    fi
}
remove_link() {
    [ -e "$CNI_NETNS" ] || return 0
    ip -n "$(netns_name)" link del net0 2>/dev/null
    return 0
}
interfaces() {
    printf '[{"name":"net0","sandbox":"%s"}]' "$CNI_NETNS"
}
main
