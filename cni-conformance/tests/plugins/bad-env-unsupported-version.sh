#!/bin/sh
# ENV-UNSUPPORTED-VERSION: accepts any cniVersion.
. "$(dirname "$0")/good.sh"
check_version() {
    :
}
main
