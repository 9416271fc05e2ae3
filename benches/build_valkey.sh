#!/bin/bash
# Builds Valkey 8.0.1 (issue 41's comparison server) from its source into
# target/valkey-8.0.1/ and prints the server's path, for VALKEY= in
# benches/cpu_per_request.sh and benches/memory.sh:
#
#   VALKEY=$(benches/build_valkey.sh) benches/cpu_per_request.sh
#
# SRC=/path/to/a/valkey/checkout builds from there (any clone with the
# 8.0.1 tag); otherwise the tag is cloned from GitHub. Needs git, make
# and a C compiler; nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${TAG:-8.0.1}
OUT=target/valkey-$TAG
if [ -x "$OUT/valkey-server" ]; then
    echo "$PWD/$OUT/valkey-server"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${SRC:-}" ]; then
    git -C "$SRC" archive "$TAG" | tar -x -C "$work"
else
    git clone -q --depth 1 --branch "$TAG" https://github.com/valkey-io/valkey.git "$work" >&2
fi
make -C "$work" -j"$(nproc)" BUILD_TLS=no >&2
mkdir -p "$OUT"
cp "$work/src/valkey-server" "$work/src/valkey-cli" "$work/src/valkey-benchmark" "$OUT/"
echo "$PWD/$OUT/valkey-server"
