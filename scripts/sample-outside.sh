#!/usr/bin/env bash
# A plugin author copies a sample out of the workspace: the `macvlan`
# sample, its tests and its `main`, into a new crate whose only path
# dependencies are the SDK's crates (cni-skel, cni-types, cni-version,
# cni-net, cni-invoke, and cni-ipam for the host-local it carries built
# in). It must build and pass its own tests, the root ones
# too: nothing of plugins-sample may be needed, what the samples share is
# the SDK's.
#
# Run by scripts/test.sh after the workspace's tests, with the workspace's
# target directory (the SDK's dependencies are built already; a cargo test
# running this would hold that directory's lock). Needs root for the
# sample's root tests; offline: the workspace's Cargo.lock pins what is
# already downloaded. The copy's binary is my-macvlan, so the workspace's
# target/debug/macvlan stays the sample's own.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
dir=$(mktemp -d /tmp/my-macvlan.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src"
deps=""
for crate in cni-skel cni-types cni-version cni-net cni-invoke cni-ipam; do
    deps+="$crate = { path = \"$root/$crate\" }"$'\n'
done
cat > "$dir/Cargo.toml" <<TOML
[package]
name = "my-macvlan"
version = "0.1.0"
edition = "2021"

[[bin]]
name = "my-macvlan"
path = "src/main.rs"

[dependencies]
${deps}serde = { version = "1", features = ["derive"] }

[dev-dependencies]
serde_json = "1"
tempfile = "3"

# Not a member of the SDK's workspace.
[workspace]
TOML
cp Cargo.lock "$dir/"
cp plugins-sample/src/macvlan/mod.rs "$dir/src/lib.rs"
cp plugins-sample/src/macvlan/tests.rs "$dir/src/tests.rs"
sed 's/plugins_sample::macvlan/my_macvlan/' plugins-sample/src/bin/macvlan.rs > "$dir/src/main.rs"
if grep -rn 'plugins_sample\|crate::' "$dir/src"; then
    echo "sample-outside: the copy still names the sample crate" >&2
    exit 1
fi
cd "$dir"
cargo build --offline --quiet
cargo test --offline --quiet -- --include-ignored --test-threads=2
echo "sample-outside: macvlan copied out of the workspace builds and passes its tests"
