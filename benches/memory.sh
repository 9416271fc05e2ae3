#!/usr/bin/env bash
# Memory per key: 1,000,000 keys (14 bytes, `key:` and ten digits; 16-byte
# values), half of them with a 1-hour TTL, piped into lapse (release),
# redis-server and, with VALKEY, a Valkey build; RSS growth per key for
# each, and the ratios to redis-server (and Valkey).
#
#   benches/memory.sh            # KEYS=1000000 by default
#   CLUSTER=1 benches/memory.sh  # all in cluster mode, serving every slot
#   VALKEY=/path/to/valkey-server benches/memory.sh   # benches/build_valkey.sh
#   KEY_DIGITS=0 benches/memory.sh  # `key:<n>` unpadded (before 2026-11-29)
#
# Needs redis-server and redis-cli (apt-get install -y redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${KEYS:-1000000}
KEY_DIGITS=${KEY_DIGITS:-10}
VALKEY=${VALKEY:-}
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
awk -v n="$KEYS" -v digits="$KEY_DIGITS" 'BEGIN {
    v = "0123456789abcdef";
    for (i = 0; i < n; i++) {
        k = digits ? sprintf("key:%0" digits "d", i) : "key:" i;
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
if [ -n "$VALKEY" ]; then
    measure "$VALKEY" --bind 127.0.0.1 --save "" --appendonly no --loglevel warning
    read -r v_before v_after v_keys <<< "$RESULT"
fi
per_key() { echo "($2 - $1) * 1024 / $3" | bc -l; }
row() { printf '| %s | %d | %.1f | %.1f | %.1f |\n' "$1" "$4" "$(echo "$2/1024" | bc -l)" "$(echo "$3/1024" | bc -l)" "$(per_key "$2" "$3" "$4")"; }
l_per=$(per_key "$l_before" "$l_after" "$l_keys")
r_per=$(per_key "$r_before" "$r_after" "$r_keys")
printf '| server | keys | RSS before (MB) | RSS after (MB) | bytes per key |\n|---|---|---|---|---|\n'
row lapse "$l_before" "$l_after" "$l_keys"
row redis-server "$r_before" "$r_after" "$r_keys"
[ -n "$VALKEY" ] && row "valkey ($("$VALKEY" --version | awk '{print $3}'))" "$v_before" "$v_after" "$v_keys"
printf '\nratio lapse / redis: %.2f\n' "$(echo "$l_per / $r_per" | bc -l)"
if [ -n "$VALKEY" ]; then
    v_per=$(per_key "$v_before" "$v_after" "$v_keys")
    printf 'ratio lapse / valkey: %.2f\n' "$(echo "$l_per / $v_per" | bc -l)"
fi
