#!/bin/sh
# VERSION-ECHO (SHOULD): answers 1.0.0 whatever it is asked.
. "$(dirname "$0")/good.sh"
cmd_version() {
    printf '{"cniVersion":"1.0.0","supportedVersions":[%s]}\n' "$SUPPORTED"
}
main
