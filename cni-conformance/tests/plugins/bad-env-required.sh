#!/bin/sh
# ENV-REQUIRED: does not require CNI_CONTAINERID.
. "$(dirname "$0")/good.sh"
required_vars() {
    case "$CNI_COMMAND" in
        ADD | CHECK) require CNI_NETNS CNI_IFNAME ;;
        DEL) require CNI_IFNAME ;;
    esac
}
main
