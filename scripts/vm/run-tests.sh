#!/usr/bin/env bash
# Runs the `vm_*` test targets of crate `tests` (tests/vm/*.rs) as root
# under Debian's own kernel, in one QEMU guest booted by virtme-ng over this
# machine's file system (docs/vm.md: why, how long, how to add a test).
#
#   scripts/vm/run-tests.sh                   every vm_* target
#   scripts/vm/run-tests.sh vm_vlan vm_vrf    only these
#   scripts/vm/run-tests.sh vm_vlan -- NAME   arguments after -- go to each
#                                             test binary (a filter, --nocapture)
#
# The test binaries and the sample plugins are built here, on the host; the
# guest only runs them, with CNI_TEST_PLUGIN_DIR naming the plugins. Each
# binary's output and exit status are written to a shared directory and
# printed here. Fails when a test fails, when the VM cannot start, and when
# the guest has not finished within CNI_VM_TIMEOUT seconds (default 1200):
# never a quiet skip. Variables CNI_TEST_* and RUST_* are passed to the
# guest.
set -euo pipefail
cd "$(dirname "$0")/../.."

CACHE=${CNI_VM_CACHE:-/var/lib/cni-rs-vm}
TIMEOUT=${CNI_VM_TIMEOUT:-1200}

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
scripts/vm/install-deps.sh | tail -n 1

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

# The one directory the guest writes: its script, then each binary's log
# and status, then `done`.
run=$target/vm/run
rm -rf "$run"
mkdir -p "$run"

{
    echo "#!/bin/bash"
    echo "# Written by scripts/vm/run-tests.sh; runs inside the guest."
    printf 'export PATH=%q HOME=%q\n' "$PATH" "${HOME:-/root}"
    printf 'export CNI_TEST_PLUGIN_DIR=%q\n' "$target/debug"
    echo "export RUST_BACKTRACE=\${RUST_BACKTRACE:-1}"
    while IFS= read -r var; do
        printf 'export %s=%q\n' "$var" "${!var}"
    done < <(compgen -e | grep -E '^(CNI_TEST_|RUST_)' | grep -vx CNI_TEST_PLUGIN_DIR || true)
    # Cargo runs a test binary in its package's directory.
    printf 'cd %q\n' "$PWD/tests"
    printf 'uname -r >%q\n' "$run/kernel"
    for entry in "${binaries[@]}"; do
        name=${entry%% *}
        exe=${entry#* }
        printf '%q' "$exe"
        [ "${#test_args[@]}" -eq 0 ] || printf ' %q' "${test_args[@]}"
        printf ' >%q 2>&1; echo $? >%q\n' "$run/$name.log" "$run/$name.status"
    done
    printf 'dmesg >%q 2>&1\n' "$run/dmesg.log"
    printf 'touch %q\n' "$run/done"
} >"$run/guest.sh"

kvm=(--disable-kvm)
# /dev/kvm here is PVM, which cannot run Debian's kernel: emulation (TCG)
# unless CNI_VM_KVM=1 says the host's KVM can.
[ "${CNI_VM_KVM:-0}" = 1 ] && kvm=()

kernel=$(cat "$CACHE/kernel/.done")
say "booting Debian's kernel $kernel (QEMU, timeout ${TIMEOUT}s) for ${#binaries[@]} test binaries"
start=$SECONDS
vm_status=0
# virtme-ng's console channel needs udev links this machine lacks, so its
# own exit status says nothing (255): the status files do.
PATH="$CACHE/qemu/bin:$PATH" timeout --kill-after=10 "$TIMEOUT" \
    "$CACHE/virtme-ng/bin/virtme-run" \
    --kimg "$CACHE/kernel/boot/vmlinuz-$kernel" --mods auto \
    "${kvm[@]}" --cpus 2 --memory 2G \
    --rwdir "$run" \
    --script-sh "bash $run/guest.sh" \
    </dev/null >"$run/vm.log" 2>&1 || vm_status=$?
say "the guest ran for $((SECONDS - start)) s"

failed=()
for entry in "${binaries[@]}"; do
    name=${entry%% *}
    echo "---- $name (in the guest, kernel $(cat "$run/kernel" 2>/dev/null || echo unknown)) ----"
    cat "$run/$name.log" 2>/dev/null || echo "(no output)"
    status=$(cat "$run/$name.status" 2>/dev/null || echo "did not finish")
    echo "---- $name: exit status $status ----"
    [ "$status" = 0 ] || failed+=("$name")
done

if [ ! -f "$run/done" ]; then
    echo "---- the VM's console (last 50 lines of $run/vm.log) ----"
    tail -n 50 "$run/vm.log"
    if [ "$vm_status" -eq 124 ] || [ "$vm_status" -eq 137 ]; then
        die "the guest did not finish within ${TIMEOUT}s (CNI_VM_TIMEOUT): killed"
    fi
    die "the guest did not run to its end (virtme-run exited $vm_status)"
fi
if [ "${#failed[@]}" -gt 0 ]; then
    die "failed under Debian's kernel: ${failed[*]}"
fi
say "all passed under Debian's kernel: ${wanted[*]}"
