#!/bin/sh
# OUTPUT-ERROR-OBJECT (SHOULD): an unknown command is reported on stderr only.
. "$(dirname "$0")/good.sh"
unknown_command() {
    echo "unknown CNI_COMMAND $CNI_COMMAND" >&2
    exit 1
}
main
