#!/bin/sh
# ADD-IPAM-ABBREVIATED: an IPAM plugin that reports an interface.
. "$(dirname "$0")/good.sh"
result() {
    if ! layout_ips; then
        printf '{"cniVersion":"%s","ip4":{"ip":"192.0.2.%s/24","gateway":"192.0.2.1"}}\n' "$version" "$1"
    else
        mode=interface
        printf '{"cniVersion":"%s","interfaces":[{"name":"host0"}],"ips":[%s]}\n' "$version" "$(ip_entry "$1")"
    fi
}
main
