#!/bin/sh
# ADD-PREVRESULT-KEPT: a chained plugin that drops prevResult's addresses.
. "$(dirname "$0")/good.sh"
pass_prev_result() {
    printf '%s' "$conf" | jq -c 'if has("prevResult") then .prevResult | .ips = [] else {cniVersion} end'
}
main
