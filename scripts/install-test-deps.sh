#!/usr/bin/env bash
# Installs what the end-to-end tests (crate `tests`) need from Debian:
#
#   golang-go                    `go`, to build tests/go/src/* and the
#                                reference noop test double
#   golang-github-appc-cni-dev   the reference Go library (libcni, skel,
#                                plugins/test/noop) under /usr/share/gocode
#   containernetworking-plugins  the reference plugins in /usr/lib/cni
#   iproute2, iputils-ping       `ip netns` and `ping` for the tests that
#                                run plugins in real network namespaces
#   gcc, libc6-dev               the process benchmark's static C harness
#                                and floor (gcc -static needs libc.a)
#   musl-tools                   `musl-gcc`, for the benchmark's floor on
#                                musl (the C library of our static build)
#   golang-github-onsi-ginkgo-dev,
#   golang-gomega-dev            Ginkgo and Gomega, to run the reference
#                                noop's own test suite against our noop
#   jq                           the shell plugins of cni-conformance's
#                                tests (cni-conformance/tests/plugins)
#   podman, runc, conmon,        a real container engine for tests/tests/
#   busybox-static               podman.rs and the demo: Podman 4.3.1 with
#                                its CNI backend runs busybox roots on
#                                networks of our plugins. runc, not crun
#                                (crun refuses hybrid cgroups); never
#                                netavark (--no-install-recommends keeps it
#                                out; the tests select the CNI backend).
#   etcd-server, etcd-client     `etcd` and `etcdctl` for the etcd store's
#                                tests (tests/src/etcd.rs starts its own)
#   nftables, iptables           `nft` and `iptables-*` (nft and legacy
#                                variants) that cni-netfilter's root tests
#                                compare the kernel's state with
#   containerd                   containerd 1.6, `ctr` and the runc shim:
#                                tests/tests/containerd_cri.rs runs a
#                                private daemon whose CRI plugin calls our
#                                plugins
#   python3, python3-venv        the CRI client's venv (below)
#
# And from PyPI, into the venv ${XDG_CACHE_HOME:-$HOME/.cache}/cni-tests/
# cri-venv (CNI_TESTS_CRI_VENV overrides the place; the tests look there):
# grpcio and container-runtime-interface-api (CRI v1 stubs), for the CRI
# client tests/cri/cri.py.
#
# Idempotent and fast: when everything is present it does nothing (no
# apt-get update). When something is missing and we are not root, it says
# what to install and exits 1.
set -euo pipefail

# ---- vm: Debian's user-mode Linux for scripts/vm/run-tests.sh ----
# (the vm_* tests: link kinds this kernel lacks). Its own script, cached
# under /var/lib/cni-rs-vm; does nothing when everything is there.
"$(dirname "$0")/vm/install-deps.sh"
# ---- end vm ----

# ---- dhcp: Debian's dnsmasq, the DHCP server of tests/tests/dhcp_* ----
# (run by the tests in a namespace they create; the -base package has no
# service that would start on the host).
if ! command -v dnsmasq >/dev/null 2>&1; then
    if [ "${EUID}" -ne 0 ]; then
        echo "install-test-deps: missing Debian package: dnsmasq-base (run as root)" >&2
        exit 1
    fi
    apt-get update -qq && apt-get install -y -qq --no-install-recommends dnsmasq-base
fi
# ---- end dhcp ----

LIBCNI_DIR=/usr/share/gocode/src/github.com/containernetworking/cni/libcni
HOST_LOCAL=/usr/lib/cni/host-local

missing=()
command -v go >/dev/null 2>&1 || missing+=(golang-go)
[ -d "$LIBCNI_DIR" ] || missing+=(golang-github-appc-cni-dev)
[ -x "$HOST_LOCAL" ] || missing+=(containernetworking-plugins)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v ping >/dev/null 2>&1 || missing+=(iputils-ping)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
# The benchmark floor and harness are linked with gcc -static: libc.a.
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || missing+=(libc6-dev)
command -v musl-gcc >/dev/null 2>&1 || missing+=(musl-tools)
# The reference noop's Ginkgo suite (tests/tests/reference_noop_suite.rs).
[ -d /usr/share/gocode/src/github.com/onsi/ginkgo ] || missing+=(golang-github-onsi-ginkgo-dev)
[ -d /usr/share/gocode/src/github.com/onsi/gomega ] || missing+=(golang-gomega-dev)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v conmon >/dev/null 2>&1 || missing+=(conmon)
# The container root needs the static build (the busybox package is not).
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || missing+=(busybox-static)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
command -v iptables-legacy-restore >/dev/null 2>&1 || missing+=(iptables)
# --- cri: containerd's CRI and its client's venv (tests/tests/containerd_cri.rs) ---
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
[ -x /usr/bin/python3 ] || missing+=(python3)
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
CRI_VENV="${CNI_TESTS_CRI_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cni-tests/cri-venv}"
# Makes the CRI client's venv unless it already imports its packages.
ensure_cri_venv() {
    if "$CRI_VENV/bin/python3" -c 'import grpc, cri_api.v1.api_pb2_grpc' >/dev/null 2>&1; then
        return 0
    fi
    echo "install-test-deps: making the CRI client's venv in $CRI_VENV"
    mkdir -p "$(dirname "$CRI_VENV")"
    /usr/bin/python3 -m venv "$CRI_VENV"
    "$CRI_VENV/bin/pip" install -q 'grpcio>=1.60' 'container-runtime-interface-api==2.0.1'
    "$CRI_VENV/bin/python3" -c 'import grpc, cri_api.v1.api_pb2_grpc' ||
        { echo "install-test-deps: the CRI venv $CRI_VENV does not import its packages" >&2; exit 1; }
}
# --- end cri ---

# ---- firewalld (tests/tests/firewalld_*.rs, tests/src/firewalld.rs) ----
# A private firewalld on a private dbus-daemon, in a network namespace of
# the test's own. Installing the package must not start it on the host:
# where systemd runs, its unit is masked first (policy-rc.d does that in
# containers).
if ! command -v firewalld >/dev/null 2>&1; then
    missing+=(firewalld)
    if [ "${EUID}" -eq 0 ] && [ -d /run/systemd/system ]; then
        ln -sf /dev/null /etc/systemd/system/firewalld.service
    fi
fi
command -v dbus-daemon >/dev/null 2>&1 || missing+=(dbus-daemon)
# ---- end firewalld ----

if [ "${#missing[@]}" -eq 0 ]; then
    ensure_cri_venv
    echo "install-test-deps: everything present (go, $LIBCNI_DIR, $HOST_LOCAL)"
    exit 0
fi

if [ "${EUID}" -ne 0 ]; then
    echo "install-test-deps: missing Debian packages: ${missing[*]}" >&2
    echo "install-test-deps: run as root, or install them yourself:" >&2
    echo "    sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi

echo "install-test-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"

# Verify what the tests actually look for.
command -v go >/dev/null 2>&1 || { echo "install-test-deps: go still not on PATH" >&2; exit 1; }
[ -d "$LIBCNI_DIR" ] || { echo "install-test-deps: $LIBCNI_DIR still missing" >&2; exit 1; }
[ -x "$HOST_LOCAL" ] || { echo "install-test-deps: $HOST_LOCAL still missing" >&2; exit 1; }
for c in podman runc conmon; do
    command -v "$c" >/dev/null 2>&1 || { echo "install-test-deps: $c still not on PATH" >&2; exit 1; }
done
ensure_cri_venv
echo "install-test-deps: done"
