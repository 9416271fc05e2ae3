#!/usr/bin/env bash
# Memory per key: 1,000,000 keys (`key:<n>`, 16-byte values), half of them
# with a 1-hour TTL, piped into lapse (release) and redis-server; RSS growth
# per key for each, and the ratio.
#
#   benches/memory.sh            # KEYS=1000000 by default
#   CLUSTER=1 benches/memory.sh  # both in cluster mode, serving every slot
#
# Needs redis-server and redis-cli (apt-get install -y redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${KEYS:-1000000}
LAPSE_ARGS=${LAPSE_ARGS:-}
CLUSTER=${CLUSTER:-}

cargo build --release --quiet
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# The load as RESP, generated once.
LOAD=$(mktemp)
# The servers run in an empty directory: a dump.rdb lying in the checkout
# would otherwise be loaded first.
RUN_DIR=$(mktemp -d)
trap 'rm -rf "$LOAD" "$RUN_DIR"' EXIT
awk -v n="$KEYS" 'BEGIN {
    v = "0123456789abcdef";
    for (i = 0; i < n; i++) {
        k = "key:" i;
        if (i % 2) printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$16\r\n%s\r\n$2\r\nEX\r\n$4\r\n3600\r\n", length(k), k, v;
        else printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$16\r\n%s\r\n", length(k), k, v;
    }
}' > "$LOAD"

# Sets RESULT to "before_kb after_kb keys" for the server started by "$@".
measure() {
    local port; port=$(free_port)
    local cluster=()
    if [ -n "$CLUSTER" ]; then
        rm -f "$RUN_DIR/nodes.conf"
        cluster=(--cluster-enabled yes --cluster-port "$(free_port)")
    fi
    "$@" --port "$port" --dir "$RUN_DIR" "${cluster[@]}" >/dev/null &
    local pid=$!
    until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
    if [ -n "$CLUSTER" ]; then
        redis-cli -p "$port" cluster addslotsrange 0 16383 >/dev/null
        until redis-cli -p "$port" cluster info | grep -q cluster_state:ok; do sleep 0.1; done
    fi
    sleep 0.5
    local before; before=$(rss_kb "$pid")
    redis-cli -p "$port" --pipe < "$LOAD" >/dev/null
    sleep 0.5
    local after; after=$(rss_kb "$pid")
    local keys; keys=$(redis-cli -p "$port" dbsize)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    RESULT="$before $after $keys"
}

# shellcheck disable=SC2086
measure ./target/release/lapse --loglevel warning --save "" $LAPSE_ARGS
read -r l_before l_after l_keys <<< "$RESULT"
measure redis-server --bind 127.0.0.1 --save "" --appendonly no --loglevel warning
read -r r_before r_after r_keys <<< "$RESULT"
l_per=$(echo "($l_after - $l_before) * 1024 / $l_keys" | bc -l)
r_per=$(echo "($r_after - $r_before) * 1024 / $r_keys" | bc -l)
printf '| server | keys | RSS before (MB) | RSS after (MB) | bytes per key |\n|---|---|---|---|---|\n'
printf '| lapse | %d | %.1f | %.1f | %.1f |\n' "$l_keys" "$(echo "$l_before/1024" | bc -l)" "$(echo "$l_after/1024" | bc -l)" "$l_per"
printf '| redis-server | %d | %.1f | %.1f | %.1f |\n' "$r_keys" "$(echo "$r_before/1024" | bc -l)" "$(echo "$r_after/1024" | bc -l)" "$r_per"
printf '\nratio lapse / redis: %.2f\n' "$(echo "$l_per / $r_per" | bc -l)"
