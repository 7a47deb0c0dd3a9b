#!/bin/sh
# VERSION-LIST-VALID: lists "1.1", which is not a version.
. "$(dirname "$0")/good.sh"
SUPPORTED="$SUPPORTED,\"1.1\""
main
