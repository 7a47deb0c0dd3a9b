#!/bin/sh
# ADD-AFTER-DEL: DEL frees the address but forgets the attachment, so a new ADD is refused.
. "$(dirname "$0")/good.sh"
cmd_del() {
    att=$(attachment)
    [ -f "$att" ] && rmdir "$datadir/ips/$(cat "$att")" 2>/dev/null
    return 0
}
main
