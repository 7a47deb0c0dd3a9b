#!/bin/sh
# VERSION-UNKNOWN-COMMAND: succeeds, silently, for a command it does not know.
. "$(dirname "$0")/good.sh"
unknown_command() {
    :
}
main
