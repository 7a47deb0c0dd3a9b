#!/bin/sh
# ENV-UNSUPPORTED-VERSION-CODE (SHOULD): refuses an unknown cniVersion with code 7, not 1.
. "$(dirname "$0")/good.sh"
check_version() {
    supports "$version" || fail 7 "unsupported cniVersion $version"
}
main
