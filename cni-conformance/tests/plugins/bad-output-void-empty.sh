#!/bin/sh
# OUTPUT-VOID-EMPTY (SHOULD): DEL prints a JSON object.
. "$(dirname "$0")/good.sh"
cmd_del() {
    release
    echo '{"released":true}'
}
main
