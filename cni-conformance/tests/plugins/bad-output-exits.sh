#!/bin/sh
# OUTPUT-EXITS: STATUS crashes (SIGABRT).
. "$(dirname "$0")/good.sh"
cmd_status() {
    kill -ABRT $$
}
main
