#!/bin/sh
# A correct CNI plugin in shell (and jq), the base of the broken plugins
# beside it: each of those sources this file, redefines one function to
# break one rule, and calls `main`.
#
# Its role comes from the configuration's `mode`:
#   ipam       hands out 192.0.2.N/24 (N from 2), one per attachment
#   interface  the same, plus a veth pair whose end CNI_IFNAME it puts in
#              the container's namespace
#   chained    passes prevResult on
# State (dataDir, else ipam.dataDir): ips/N/ is a taken address (mkdir is
# atomic, so concurrent ADDs never share one), att/ID-IFNAME holds N.
# No `set -u`: a broken copy that skips a check of its input must still
# run on to break only that rule.

SUPPORTED='"0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"'

# Prints an error object and exits 1.
fail() {
    printf '{"cniVersion":"%s","code":%s,"msg":"%s"}\n' "${version:-1.1.0}" "$1" "$2"
    exit 1
}

# Fails with code 4 naming the first of the variables that is unset.
require() {
    for var in "$@"; do
        eval "value=\${$var:-}"
        [ -n "$value" ] || fail 4 "required environment variable $var is missing"
    done
}

required_vars() {
    case "$CNI_COMMAND" in
        ADD | CHECK) require CNI_CONTAINERID CNI_NETNS CNI_IFNAME ;;
        DEL) require CNI_CONTAINERID CNI_IFNAME ;;
    esac
}

# Reads the configuration into shell variables, failing with code 6.
parse() {
    vars=$(printf '%s' "$conf" | jq -r '@sh "version=\(.cniVersion // "") mode=\(.mode // "ipam") datadir=\(.dataDir // .ipam.dataDir // "/tmp") has_prev=\(has("prevResult"))"' 2>/dev/null) \
        || fail 6 "cannot decode the configuration"
    eval "$vars"
}

supports() {
    case ",$SUPPORTED," in *",\"$1\","*) return 0 ;; esac
    return 1
}

check_version() {
    supports "$version" || fail 1 "unsupported cniVersion $version"
}

# At 0.3.0 or later.
layout_ips() {
    case "$version" in 0.1.* | 0.2.*) return 1 ;; esac
}

# Below 1.0.0.
has_ip_version() {
    case "$version" in 0.*) return 0 ;; esac
    return 1
}

attachment() {
    echo "$datadir/att/${CNI_CONTAINERID:-}-${CNI_IFNAME:-}"
}

# Takes the lowest free address number into $n.
allocate() {
    mkdir -p "$datadir/ips" "$datadir/att"
    n=2
    until mkdir "$datadir/ips/$n" 2>/dev/null; do
        n=$((n + 1))
        [ "$n" -lt 255 ] || fail 11 "no free address"
    done
    echo "$n" >"$(attachment)"
}

release() {
    att=$(attachment)
    [ -f "$att" ] || return 0
    rmdir "$datadir/ips/$(cat "$att")" 2>/dev/null
    rm -f "$att"
}

netns_name() {
    basename "$CNI_NETNS"
}

make_link() {
    if ! ip -n "$(netns_name)" link add "$CNI_IFNAME" type veth peer name "${CNI_IFNAME}h" 2>/dev/null; then
        release
        fail 101 "cannot create $CNI_IFNAME in $CNI_NETNS (it may exist)"
    fi
}

remove_link() {
    [ -e "$CNI_NETNS" ] || return 0
    ip -n "$(netns_name)" link del "$CNI_IFNAME" 2>/dev/null
    return 0
}

ip_entry() {
    ver=""
    has_ip_version && ver='"version":"4",'
    iface=""
    [ "$mode" = interface ] && iface=',"interface":0'
    printf '{%s"address":"192.0.2.%s/24","gateway":"192.0.2.1"%s}' "$ver" "$1" "$iface"
}

interfaces() {
    printf '[{"name":"%s","sandbox":"%s"}]' "$CNI_IFNAME" "$CNI_NETNS"
}

# Prints the ADD result for address number $1.
result() {
    if ! layout_ips; then
        printf '{"cniVersion":"%s","ip4":{"ip":"192.0.2.%s/24","gateway":"192.0.2.1"}}\n' "$version" "$1"
    elif [ "$mode" = interface ]; then
        printf '{"cniVersion":"%s","interfaces":%s,"ips":[%s]}\n' "$version" "$(interfaces)" "$(ip_entry "$1")"
    else
        printf '{"cniVersion":"%s","ips":[%s]}\n' "$version" "$(ip_entry "$1")"
    fi
}

pass_prev_result() {
    printf '%s' "$conf" | jq -c '.prevResult // {"cniVersion": .cniVersion}'
}

cmd_add() {
    if [ "$mode" = chained ]; then
        pass_prev_result
        return
    fi
    [ -f "$(attachment)" ] && fail 7 "$CNI_CONTAINERID/$CNI_IFNAME is already added"
    allocate
    if [ "$mode" = interface ]; then
        make_link
    fi
    result "$n"
}

cmd_check() {
    case "$version" in
        0.1.* | 0.2.* | 0.3.*) fail 1 "CHECK needs cniVersion 0.4.0 or later" ;;
    esac
    [ "$mode" = chained ] && return
    [ -f "$(attachment)" ] || fail 3 "$CNI_CONTAINERID/$CNI_IFNAME is not added"
}

cmd_del() {
    [ "$mode" = chained ] && return
    release
    [ "$mode" = interface ] && remove_link
    return 0
}

cmd_gc() {
    mkdir -p "$datadir/att"
    valid=$(printf '%s' "$conf" | jq -r '.["cni.dev/valid-attachments"] // [] | .[] | "\(.containerID)-\(.ifname)"')
    for att in "$datadir"/att/*; do
        [ -f "$att" ] || continue
        name=$(basename "$att")
        if ! printf '%s\n' "$valid" | grep -qxF "$name"; then
            rmdir "$datadir/ips/$(cat "$att")" 2>/dev/null
            rm -f "$att"
        fi
    done
}

cmd_status() {
    :
}

cmd_version() {
    asked=$(printf '%s' "$conf" | jq -r '.cniVersion // "1.1.0"' 2>/dev/null) || asked=1.1.0
    printf '{"cniVersion":"%s","supportedVersions":[%s]}\n' "${asked:-1.1.0}" "$SUPPORTED"
}

no_command() {
    echo "good.sh: a CNI plugin; run it through a runtime" >&2
    version=1.1.0
    fail 4 "required environment variable CNI_COMMAND is missing"
}

unknown_command() {
    fail 4 "unknown CNI_COMMAND $CNI_COMMAND"
}

main() {
    conf=$(cat)
    [ -n "${CNI_COMMAND:-}" ] || no_command
    if [ "$CNI_COMMAND" = VERSION ]; then
        cmd_version
        exit 0
    fi
    parse
    check_version
    required_vars
    case "$CNI_COMMAND" in
        ADD) cmd_add ;;
        CHECK) cmd_check ;;
        DEL) cmd_del ;;
        GC) cmd_gc ;;
        STATUS) cmd_status ;;
        *) unknown_command ;;
    esac
    exit 0
}

case "$0" in
    */good.sh) main ;;
esac
