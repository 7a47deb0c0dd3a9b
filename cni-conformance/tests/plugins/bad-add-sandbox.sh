#!/bin/sh
# ADD-SANDBOX (SHOULD): the container interface has no sandbox.
. "$(dirname "$0")/good.sh"
interfaces() {
    printf '[{"name":"%s"}]' "$CNI_IFNAME"
}
main
