#!/bin/sh
# ENV-NO-COMMAND (SHOULD): without CNI_COMMAND, prints what it is and exits 0.
. "$(dirname "$0")/good.sh"
no_command() {
    echo "good.sh: a CNI plugin; run it through a runtime" >&2
    exit 0
}
main
