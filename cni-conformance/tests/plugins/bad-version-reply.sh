#!/bin/sh
# VERSION-REPLY: asked properly, it lists its versions as one string.
. "$(dirname "$0")/good.sh"
cmd_version() {
    if [ -n "$conf" ]; then
        printf '{"cniVersion":"1.1.0","supportedVersions":"0.1.0 to 1.1.0"}\n'
    else
        printf '{"cniVersion":"1.1.0","supportedVersions":[%s]}\n' "$SUPPORTED"
    fi
}
main
