#!/bin/sh
# OUTPUT-NO-ERROR-ON-SUCCESS: STATUS prints an error object but exits 0.
. "$(dirname "$0")/good.sh"
cmd_status() {
    printf '{"cniVersion":"%s","code":50,"msg":"not ready"}\n' "$version"
}
main
