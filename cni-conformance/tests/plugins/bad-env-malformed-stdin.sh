#!/bin/sh
# ENV-MALFORMED-STDIN (SHOULD): an undecodable configuration is code 7, not 6.
. "$(dirname "$0")/good.sh"
parse() {
    vars=$(printf '%s' "$conf" | jq -r '@sh "version=\(.cniVersion // "") mode=\(.mode // "ipam") datadir=\(.dataDir // .ipam.dataDir // "/tmp") has_prev=\(has("prevResult"))"' 2>/dev/null) \
        || fail 7 "invalid configuration"
    eval "$vars"
}
main
