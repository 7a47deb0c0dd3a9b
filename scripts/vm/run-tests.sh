#!/usr/bin/env bash
# Runs the `vm_*` test targets of crate `tests` (tests/vm/*.rs) as root
# under Debian's own kernel, all in one boot, over this machine's own file
# system (read-only but for the target directory). docs/vm.md says
# why, what it costs, and how to add a test.
#
#   scripts/vm/run-tests.sh                   every vm_* target
#   scripts/vm/run-tests.sh vm_vlan vm_vrf    only these
#   scripts/vm/run-tests.sh vm_vlan -- NAME   arguments after -- go to each
#                                             test binary (a filter, --nocapture)
#
# CNI_VM_BACKEND picks the kernel: `uml`, Debian's user-mode Linux, about
# 2 s a boot, no emulation; `qemu`, Debian's amd64 kernel booted by
# virtme-ng under QEMU, software-emulated here (about 15 s a boot, code
# 15-25x slower) but with what UML lacks (nftables' ip/ip6/inet families);
# or `auto` (default): user-mode Linux when a trivial guest boots on this
# host, QEMU otherwise (UML 6.1 cannot boot where the CPU's extended state
# is larger than it expects, e.g. with AMX: "ptrace set fp regs failed").
# The choice and its reason are printed; nothing is skipped: a host where
# the chosen backend cannot boot fails the run, saying so.
#
# The test binaries and the sample plugins are built here, on the host; the
# guest only runs them, with CNI_TEST_PLUGIN_DIR naming the plugins. Each
# binary's output and exit status are written to target/vm/run-PID and
# printed here. Fails when a test fails, when the VM cannot start, and
# when the guest has not finished within CNI_VM_TIMEOUT seconds (default
# 900, 2400 under QEMU): never a quiet skip. A test binary still running
# after CNI_VM_BINARY_TIMEOUT seconds (default 300, 900 under QEMU) is
# killed in the guest (exit status 124) and the next one runs. Variables
# CNI_TEST_* and RUST_* are passed to the guest.
set -euo pipefail
cd "$(dirname "$0")/../.."

CACHE=${CNI_VM_CACHE:-/var/lib/cni-rs-vm}
TIMEOUT=${CNI_VM_TIMEOUT:-900}
BINARY_TIMEOUT=${CNI_VM_BINARY_TIMEOUT:-300}
BACKEND=${CNI_VM_BACKEND:-auto}

say() { echo "vm: $*"; }
die() { echo "vm: $*" >&2; exit 1; }

wanted=()
test_args=()
while [ $# -gt 0 ]; do
    case $1 in
        --) shift; test_args=("$@"); break ;;
        *) wanted+=("$1"); shift ;;
    esac
done

[ "${EUID}" -eq 0 ] || die "the vm_* tests run as root (namespaces, links): run as root"
case $BACKEND in
    uml | auto) scripts/vm/install-deps.sh | tail -n 1 ;;
    qemu) scripts/vm/install-deps.sh --qemu | tail -n 1 ;;
    *) die "CNI_VM_BACKEND=$BACKEND: expected auto, uml or qemu" ;;
esac
uml_version=$(cat "$CACHE/uml/.done")
UML=${CNI_VM_UML:-$CACHE/uml/root/usr/bin/linux.uml}

# Boots user-mode Linux once with a trivial init that writes a file on a
# hostfs mount and powers off: true when it ran. Its console is left in $1.
uml_boots() {
    local dir=$1
    cat >"$dir/init.sh" <<EOF
#!/bin/sh
mount -t hostfs -o $dir probe $dir && echo ran >$dir/ran
poweroff -f
EOF
    chmod +x "$dir/init.sh"
    timeout --kill-after=5 60 "$UML" mem=256M rootfstype=hostfs rootflags=/ ro \
        init="$dir/init.sh" con=null con0=null,fd:1 </dev/null >"$dir/console.log" 2>&1 || true
    [ -f "$dir/ran" ]
}

if [ "$BACKEND" = auto ]; then
    probe=$(mktemp -d)
    if uml_boots "$probe"; then
        BACKEND=uml
        say "backend: user-mode Linux (a trivial guest booted on this host; CNI_VM_BACKEND=qemu to use QEMU)"
    else
        # The lines that say why: UML's own complaint and the panic.
        why=$(grep -a -m 3 -i -E 'failed|panic|error' "$probe/console.log" | tr -d '\r' | paste -sd ';' -)
        BACKEND=qemu
        say "backend: QEMU, because user-mode Linux $uml_version cannot boot on this host (${why:-no output; see below})"
        [ -n "$why" ] || tail -n 5 "$probe/console.log" | sed 's/^/vm:   /'
        scripts/vm/install-deps.sh --qemu | tail -n 1
    fi
    rm -rf "$probe"
fi
# QEMU emulates (code 15-25x slower): the same tests need longer bounds.
if [ "$BACKEND" = qemu ]; then
    TIMEOUT=${CNI_VM_TIMEOUT:-2400}
    BINARY_TIMEOUT=${CNI_VM_BINARY_TIMEOUT:-900}
fi

metadata=$(cargo metadata --no-deps --format-version 1)
target=$(jq -r .target_directory <<<"$metadata")
mapfile -t all < <(jq -r '.packages[] | select(.name == "tests") | .targets[]
    | select(.kind == ["test"] and (.name | startswith("vm_"))) | .name' <<<"$metadata")
[ "${#all[@]}" -gt 0 ] || die "crate tests declares no vm_* test target (tests/Cargo.toml)"
if [ "${#wanted[@]}" -eq 0 ]; then
    wanted=("${all[@]}")
fi
for name in "${wanted[@]}"; do
    printf '%s\n' "${all[@]}" | grep -qxF -- "$name" ||
        die "no test target $name in crate tests; there are: ${all[*]}"
done

say "building the sample plugins and ${wanted[*]}"
cargo build -p plugins-sample --bins --quiet
target_flags=()
for name in "${wanted[@]}"; do
    target_flags+=(--test "$name")
done
mapfile -t binaries < <(
    cargo test -p tests "${target_flags[@]}" --no-run --quiet --message-format=json-render-diagnostics |
        jq -r 'select(.reason == "compiler-artifact" and .executable != null
            and .target.kind == ["test"]) | .target.name + " " + .executable'
)
[ "${#binaries[@]}" -eq "${#wanted[@]}" ] ||
    die "cargo built ${#binaries[@]} test binaries for ${#wanted[@]} targets: ${binaries[*]}"

# The guest sees this machine's file system read-only but for the target
# directory (where the tests' helpers build and cache) and tmpfs mounts
# (/tmp, /run, /var/lib/cni). It writes here its script, then each binary's
# log and status, then `done`.
# One directory per run, so that runs may overlap; removed when all passed,
# kept (and named) otherwise.
run=$target/vm/run-$$
rm -rf "$run"
mkdir -p "$run"

{
    echo "#!/bin/bash"
    echo "# Written by scripts/vm/run-tests.sh; runs inside the guest."
    if [ "$BACKEND" = uml ]; then
        # This script is UML's init: it mounts what virtme-ng's init mounts
        # for QEMU, and the target directory (hostfs, writable).
        echo "mount -t proc proc /proc; mount -t sysfs sysfs /sys"
        # The kernel may have mounted /dev itself (CONFIG_DEVTMPFS_MOUNT).
        echo "mountpoint -q /dev || mount -t devtmpfs dev /dev"
        echo "mount -t tmpfs run /run; mount -t tmpfs tmp /tmp"
        echo "mkdir -p /dev/shm /dev/pts; mount -t tmpfs shm /dev/shm; mount -t devpts pts /dev/pts"
        printf 'mount -t hostfs -o %q target %q\n' "$target" "$target"
        printf 'mount -t tmpfs modules /lib/modules; ln -s %q /lib/modules/%q\n' \
            "$CACHE/uml/root/usr/lib/uml/modules/$uml_version" "$uml_version"
        echo "ip link set lo up"
    else
        # virtme-ng's init leaves the host's /tmp (read-only here) and
        # may leave /run: fresh tmpfs mounts, as under user-mode Linux.
        echo "mount -t tmpfs tmp /tmp"
        echo "mountpoint -q /run || mount -t tmpfs run /run"
    fi
    # The reference plugins' default state directory (host-local's
    # leases), empty and writable in the guest.
    echo "[ -d /var/lib/cni ] && mount -t tmpfs cni /var/lib/cni"
    printf 'export PATH=%q HOME=%q\n' "$PATH" "${HOME:-/root}"
    printf 'export CNI_TEST_PLUGIN_DIR=%q\n' "$target/debug"
    # Tests scale the bounds they put on a plugin's run by the backend's
    # slowness (tests::slowness).
    printf 'export CNI_TEST_VM_BACKEND=%q\n' "$BACKEND"
    echo "export RUST_BACKTRACE=\${RUST_BACKTRACE:-1}"
    while IFS= read -r var; do
        printf 'export %s=%q\n' "$var" "${!var}"
    done < <(compgen -e | grep -E '^(CNI_TEST_|RUST_)' | grep -vx -e CNI_TEST_PLUGIN_DIR -e CNI_TEST_VM_BACKEND || true)
    # Cargo runs a test binary in its package's directory.
    printf 'cd %q\n' "$PWD/tests"
    printf 'uname -r >%q\n' "$run/kernel"
    for entry in "${binaries[@]}"; do
        name=${entry%% *}
        exe=${entry#* }
        printf 'timeout --kill-after=5 %q %q' "$BINARY_TIMEOUT" "$exe"
        [ "${#test_args[@]}" -eq 0 ] || printf ' %q' "${test_args[@]}"
        printf ' >%q 2>&1; echo $? >%q\n' "$run/$name.log" "$run/$name.status"
    done
    printf 'dmesg >%q 2>&1\n' "$run/dmesg.log"
    printf 'touch %q\n' "$run/done"
    # UML's init must not return (the kernel would panic): power off.
    [ "$BACKEND" = qemu ] || echo "sync; poweroff -f"
} >"$run/guest.sh"
chmod +x "$run/guest.sh"

# Boots the guest, which runs $run/guest.sh, its console going to
# $run/console.log; `timeout` kills the whole process group (QEMU, or UML
# and its helper processes) when the guest hangs.
boot_uml() {
    say "booting Debian's user-mode Linux $uml_version (timeout ${TIMEOUT}s) for ${#binaries[@]} test binaries"
    # The guest's memory is a file in TMPDIR (sparse, removed at exit).
    timeout --kill-after=10 "$TIMEOUT" "$UML" \
        mem=2G rootfstype=hostfs rootflags=/ ro init="$run/guest.sh" \
        con=null con0=null,fd:1 \
        </dev/null >"$run/console.log" 2>&1
}

boot_qemu() {
    local kernel kvm=(--disable-kvm)
    kernel=$(cat "$CACHE/kernel/.done")
    # /dev/kvm here is PVM, which cannot run Debian's kernel: emulation
    # (TCG) unless CNI_VM_KVM=1 says the host's KVM can.
    [ "${CNI_VM_KVM:-0}" = 1 ] && kvm=()
    say "booting Debian's kernel $kernel under QEMU (timeout ${TIMEOUT}s) for ${#binaries[@]} test binaries"
    # virtme-ng's console channel needs udev links this machine lacks, so
    # its own exit status says nothing (255): the status files do.
    PATH="$CACHE/qemu/bin:$PATH" timeout --kill-after=10 "$TIMEOUT" \
        "$CACHE/virtme-ng/bin/virtme-run" \
        --kimg "$CACHE/kernel/boot/vmlinuz-$kernel" --mods auto \
        "${kvm[@]}" --cpus 2 --memory 2G \
        --rwdir "$target" \
        --script-sh "bash $run/guest.sh" \
        </dev/null >"$run/console.log" 2>&1
}

start=$SECONDS
vm_status=0
"boot_$BACKEND" || vm_status=$?
say "the guest ran for $((SECONDS - start)) s"

failed=()
for entry in "${binaries[@]}"; do
    name=${entry%% *}
    echo "---- $name (in the guest, kernel $(cat "$run/kernel" 2>/dev/null || echo unknown)) ----"
    # A killed binary's last line may lack its newline: add one.
    sed -e '$a\' "$run/$name.log" 2>/dev/null || echo "(no output)"
    status=$(cat "$run/$name.status" 2>/dev/null || echo "did not finish")
    case $status in
        124 | 137) echo "---- $name: killed after ${BINARY_TIMEOUT}s (CNI_VM_BINARY_TIMEOUT) ----" ;;
        *) echo "---- $name: exit status $status ----" ;;
    esac
    [ "$status" = 0 ] || failed+=("$name")
done

if [ ! -f "$run/done" ] || [ "${#failed[@]}" -gt 0 ]; then
    say "the guest's files are kept in $run"
fi
if [ ! -f "$run/done" ]; then
    echo "---- the guest's console (last 50 lines of $run/console.log) ----"
    tail -n 50 "$run/console.log"
    if [ "$vm_status" -eq 124 ] || [ "$vm_status" -eq 137 ]; then
        die "the guest did not finish within ${TIMEOUT}s (CNI_VM_TIMEOUT): killed"
    fi
    die "the guest did not run to its end ($BACKEND exited $vm_status)"
fi
if [ "${#failed[@]}" -gt 0 ]; then
    die "failed under Debian's kernel: ${failed[*]}"
fi
rm -rf "$run"
say "all passed under Debian's kernel: ${wanted[*]}"
