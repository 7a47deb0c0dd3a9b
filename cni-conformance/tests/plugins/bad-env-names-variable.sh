#!/bin/sh
# ENV-NAMES-VARIABLE (SHOULD): code 4, but the error does not say which variable.
. "$(dirname "$0")/good.sh"
require() {
    for var in "$@"; do
        eval "value=\${$var:-}"
        [ -n "$value" ] || fail 4 "a required environment variable is missing"
    done
}
main
