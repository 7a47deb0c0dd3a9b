#!/bin/sh
# ADD-ADDRESSES: the gateway is 192.0.2.256.
. "$(dirname "$0")/good.sh"
ip_entry() {
    ver=""
    has_ip_version && ver='"version":"4",'
    printf '{%s"address":"192.0.2.%s/24","gateway":"192.0.2.256"}' "$ver" "$1"
}
result() {
    if ! layout_ips; then
        printf '{"cniVersion":"%s","ip4":{"ip":"192.0.2.%s/24","gateway":"192.0.2.256"}}\n' "$version" "$1"
    else
        printf '{"cniVersion":"%s","ips":[%s]}\n' "$version" "$(ip_entry "$1")"
    fi
}
main
