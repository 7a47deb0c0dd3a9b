#!/bin/sh
# OUTPUT-ONE-DOCUMENT: DEL logs a JSON line on stdout before its empty object.
. "$(dirname "$0")/good.sh"
cmd_del() {
    echo '{"log":"releasing"}'
    release
    echo '{}'
}
main
