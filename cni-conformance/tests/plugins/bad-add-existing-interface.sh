#!/bin/sh
# ADD-EXISTING-INTERFACE: takes an interface already named CNI_IFNAME as its own.
. "$(dirname "$0")/good.sh"
make_link() {
    ip -n "$(netns_name)" link add "$CNI_IFNAME" type veth peer name "${CNI_IFNAME}h" 2>/dev/null
    return 0
}
main
