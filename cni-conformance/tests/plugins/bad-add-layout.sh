#!/bin/sh
# ADD-LAYOUT: 0.3.x and 0.4.0 results lack ips[].version.
. "$(dirname "$0")/good.sh"
has_ip_version() {
    return 1
}
main
