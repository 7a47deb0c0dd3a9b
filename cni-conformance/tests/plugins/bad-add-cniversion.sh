#!/bin/sh
# ADD-CNIVERSION: results always say cniVersion 1.1.0.
. "$(dirname "$0")/good.sh"
result() {
    if ! layout_ips; then
        printf '{"cniVersion":"1.1.0","ip4":{"ip":"192.0.2.%s/24","gateway":"192.0.2.1"}}\n' "$1"
    else
        printf '{"cniVersion":"1.1.0","ips":[%s]}\n' "$(ip_entry "$1")"
    fi
}
main
