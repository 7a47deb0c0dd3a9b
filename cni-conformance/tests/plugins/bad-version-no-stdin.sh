#!/bin/sh
# VERSION-NO-STDIN (SHOULD): needs a configuration on stdin to answer VERSION.
. "$(dirname "$0")/good.sh"
cmd_version() {
    [ -n "$conf" ] || fail 6 "no configuration on stdin"
    printf '{"cniVersion":"1.1.0","supportedVersions":[%s]}\n' "$SUPPORTED"
}
main
