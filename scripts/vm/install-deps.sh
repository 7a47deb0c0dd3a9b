#!/usr/bin/env bash
# Installs what scripts/vm/run-tests.sh needs to run the `vm_*` tests under
# Debian's own kernel (docs/vm.md says why and how):
#
#   kmod               `modprobe`: the guest loads Debian's modules (8021q,
#                      ipvlan, vrf, dummy, bonding) through the host's tools
#   user-mode-linux    Debian's kernel built as a program (the default
#                      backend), *extracted* under the cache
#
# and, with `--qemu` (CNI_VM_BACKEND=qemu: for tests that need what UML
# lacks, nftables' ip/ip6/inet families):
#
#   linux-image-amd64  Debian's kernel and modules, *extracted* under the
#                      cache (installing it pulls in udev and initramfs-tools),
#                      with `depmod -b` run over the extracted tree
#   qemu-system-x86    QEMU 7.2 and its firmware, *extracted* under the cache
#                      with the libraries this machine lacks (installing it
#                      with apt removes the image's newer qemu-utils)
#   virtme-ng          (PyPI) boots that kernel over this machine's own file
#                      system, in a venv under the cache (python3-venv)
#
# Everything lands in $CNI_VM_CACHE (default /var/lib/cni-rs-vm), which
# survives reruns and `cargo clean`. Not under /var/cache: virtme-ng's guest
# init mounts a tmpfs there, which would hide the kernel's modules.
# Idempotent: each piece is skipped when its marker file is there, so a
# second run does nothing and needs no network. Needs root the first time.
set -euo pipefail

CACHE=${CNI_VM_CACHE:-/var/lib/cni-rs-vm}
VIRTME_NG_VERSION=1.42
qemu=0
[ "${1:-}" = --qemu ] && qemu=1

say() { echo "vm/install-deps: $*"; }
die() { echo "vm/install-deps: $*" >&2; exit 1; }

need_root() {
    [ "${EUID}" -eq 0 ] || die "$1 is missing; run $0 as root to install it"
}

mkdir -p "$CACHE" 2>/dev/null || need_root "$CACHE"

apt_updated=
apt_update_once() {
    if [ -z "$apt_updated" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        apt_updated=1
    fi
}

# The packages `apt-get install` would add for $1, without recommends
# (libraries already on this machine are not listed).
would_install() {
    apt-get install -s --no-install-recommends "$1" 2>/dev/null |
        awk '$1 == "Inst" { print $2 }'
}

# Downloads the named packages and extracts them all into $1 (plain files,
# no maintainer scripts, nothing registered with dpkg).
extract_debs() {
    local root=$1
    shift
    local debs
    debs=$(mktemp -d)
    # apt downloads as its own user, _apt, when it may write there.
    chmod 755 "$debs"
    chown _apt "$debs" 2>/dev/null || true
    (cd "$debs" && apt-get download -qq "$@")
    mkdir -p "$root"
    for deb in "$debs"/*.deb; do
        dpkg-deb -x "$deb" "$root"
    done
    rm -rf "$debs"
}

# kmod on the host: the guest runs the host's `modprobe`.
if ! command -v modprobe >/dev/null 2>&1; then
    need_root kmod
    apt_update_once
    say "installing kmod"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kmod
fi

# Either guest links its kernel's modules into /lib/modules, which must
# exist (empty) on the host: the guest mounts a tmpfs over it and cannot
# create it on the read-only root.
if [ ! -d /lib/modules ]; then
    need_root /lib/modules
    mkdir -p /lib/modules
fi

# User-mode Linux: the kernel program and its modules (with their index).
if [ ! -f "$CACHE/uml/.done" ]; then
    need_root "user-mode Linux ($CACHE/uml)"
    apt_update_once
    say "extracting user-mode-linux into $CACHE/uml"
    rm -rf "$CACHE/uml"
    extract_debs "$CACHE/uml/root" user-mode-linux
    ls "$CACHE/uml/root/usr/lib/uml/modules" >"$CACHE/uml/.done"
fi

if [ "$qemu" = 0 ]; then
    say "ready in $CACHE (user-mode Linux $(cat "$CACHE/uml/.done"))"
    exit 0
fi

# Debian's kernel, extracted, with its module index.
if [ ! -f "$CACHE/kernel/.done" ]; then
    need_root "Debian's kernel ($CACHE/kernel)"
    apt_update_once
    image=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
    [ -n "$image" ] || die "cannot tell which kernel linux-image-amd64 depends on"
    say "extracting $image into $CACHE/kernel"
    rm -rf "$CACHE/kernel"
    extract_debs "$CACHE/kernel" "$image"
    version=$(ls "$CACHE/kernel/lib/modules")
    depmod -b "$CACHE/kernel" "$version"
    echo "$version" >"$CACHE/kernel/.done"
fi

# QEMU, extracted with the libraries it needs, behind a wrapper that finds
# them and its firmware.
if [ ! -f "$CACHE/qemu/.done" ]; then
    need_root "QEMU ($CACHE/qemu)"
    apt_update_once
    # shellcheck disable=SC2207
    pkgs=($(would_install qemu-system-x86))
    [ "${#pkgs[@]}" -gt 0 ] || pkgs=(qemu-system-x86 qemu-system-data seabios ipxe-qemu)
    say "extracting ${pkgs[*]} into $CACHE/qemu"
    rm -rf "$CACHE/qemu"
    extract_debs "$CACHE/qemu/root" "${pkgs[@]}"
    mkdir -p "$CACHE/qemu/bin"
    cat >"$CACHE/qemu/bin/qemu-system-x86_64" <<EOF
#!/bin/sh
# Written by scripts/vm/install-deps.sh: QEMU extracted, not installed.
export LD_LIBRARY_PATH="$CACHE/qemu/root/usr/lib/x86_64-linux-gnu:$CACHE/qemu/root/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "$CACHE/qemu/root/usr/bin/qemu-system-x86_64" -L "$CACHE/qemu/root/usr/share/qemu" -L "$CACHE/qemu/root/usr/share/seabios" "\$@"
EOF
    chmod +x "$CACHE/qemu/bin/qemu-system-x86_64"
    "$CACHE/qemu/bin/qemu-system-x86_64" --version >/dev/null ||
        die "the extracted QEMU does not run: $CACHE/qemu/bin/qemu-system-x86_64 --version"
    touch "$CACHE/qemu/.done"
fi

# virtme-ng, in a venv of its own, on Debian's Python (not whichever
# python3 comes first in PATH, which may not be there next time).
if [ ! -f "$CACHE/virtme-ng/.done" ]; then
    if ! dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q 'ok installed'; then
        need_root python3-venv
        apt_update_once
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv
    fi
    say "installing virtme-ng $VIRTME_NG_VERSION into $CACHE/virtme-ng"
    rm -rf "$CACHE/virtme-ng"
    /usr/bin/python3 -m venv "$CACHE/virtme-ng"
    "$CACHE/virtme-ng/bin/pip" install -q "virtme-ng==$VIRTME_NG_VERSION"
    touch "$CACHE/virtme-ng/.done"
fi

say "ready in $CACHE (user-mode Linux $(cat "$CACHE/uml/.done"), QEMU with kernel $(cat "$CACHE/kernel/.done"))"
