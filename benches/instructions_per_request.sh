#!/bin/bash
# Server instructions per request, counted by valgrind's callgrind: the
# same count for the same binary and load whatever else the machine does
# (this machine's perf has no instruction counter), so small differences
# between two commands, or two builds, show where seconds would drown
# them. The count covers the server process only, from after a warm-up
# run to the end of the measured run (callgrind_control --zero / --dump);
# `redis-benchmark -c 50 -P $PIPELINE -r 100000`, REQUESTS each, over a
# data set of about 86,000 keys (key:__rand_int__, 16-byte values).
#
#   benches/instructions_per_request.sh SET key:__rand_int__ v EX 100000
#   BIN=/path/to/other/lapse PIPELINE=1 benches/instructions_per_request.sh GET k
#   KEEP=/tmp/profile.out ...   # keeps the dump for callgrind_annotate
#
# Under callgrind the server runs ~50x slower: the count is the figure,
# not the rate.
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-100000}
PIPELINE=${PIPELINE:-16}
BIN=${BIN:-target/release/lapse}
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install -y valgrind)"; exit 1; }
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is needed (apt-get install -y redis-tools)"; exit 1; }
[ "$BIN" != target/release/lapse ] || cargo build --release --bin lapse >/dev/null 2>&1
out=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# In an empty directory: a dump.rdb where the script is run from would be
# loaded first and decide whether reads hit.
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out.%p" \
    "$BIN" --dir "$out" --port "$port" --save "" >"$out/valgrind.log" 2>&1 &
vpid=$!
trap 'kill $vpid 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 150); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.2; done
run() { redis-benchmark -p "$port" -c 50 -n "$REQUESTS" -P "$PIPELINE" -r 100000 "$@" >/dev/null 2>&1; }
# The key some tests read (GETLEASE of a fresh key: stale only after a day).
redis-cli -p "$port" SET fresh vvvvvvvvvvvvvvvv EX 100000 STALE 100 >/dev/null
# The data set every test meets: key:__rand_int__ written 200,000 times
# (about 86% of the 100,000 names), 16-byte values, so that GET of
# key:__rand_int__ mostly hits and SET mostly overwrites.
redis-benchmark -p "$port" -c 50 -n 200000 -P 16 -r 100000 -d 16 -t set >/dev/null 2>&1
run "$@"
callgrind_control --zero "$vpid" >/dev/null 2>&1
run "$@"
callgrind_control --dump "$vpid" >/dev/null 2>&1
sleep 0.5
dump=$(ls -t "$out"/callgrind.out.* | head -1)
total=$(grep -m1 "^summary:\|^totals:" "$dump" | awk '{print $2}')
[ -z "${KEEP:-}" ] || cp "$dump" "$KEEP"
echo "$* (-P $PIPELINE): $((total / REQUESTS)) instructions/request"
redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
wait "$vpid" 2>/dev/null || true
