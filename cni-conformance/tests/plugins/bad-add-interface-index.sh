#!/bin/sh
# ADD-INTERFACE-INDEX: ips[].interface is 1 with one interface (an off-by-one).
. "$(dirname "$0")/good.sh"
ip_entry() {
    ver=""
    has_ip_version && ver='"version":"4",'
    printf '{%s"address":"192.0.2.%s/24","gateway":"192.0.2.1","interface":1}' "$ver" "$1"
}
main
