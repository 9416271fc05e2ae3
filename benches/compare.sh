#!/usr/bin/env bash
# Side-by-side throughput: lapse (release) and redis-server on free ports,
# redis-benchmark against each in turn (A B, then B A, ...), medians of
# PAIRS runs, ratios lapse / redis.
#
#   benches/compare.sh                  # defaults below
#   PAIRS=5 REQUESTS=300000 benches/compare.sh
#   TESTS="set get" PIPELINES="16" benches/compare.sh
#   AGAINST="--expire-strategy uniform" TESTS=setex benches/compare.sh
#       (B is a second lapse started with these flags instead of redis-server)
#   AGAINST_BIN=/path/to/older/lapse TESTS="set incr" PIPELINES=16 benches/compare.sh
#       (B is another lapse build: before/after comparisons of a change)
#
# Needs redis-server and redis-benchmark (apt-get install -y redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."

PAIRS=${PAIRS:-3}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-50}
KEYSPACE=${KEYSPACE:-1000000}
TESTS=${TESTS:-"ping set get incr mset setex"}
PIPELINES=${PIPELINES:-"1 16"}
LAPSE_ARGS=${LAPSE_ARGS:-}
AGAINST=${AGAINST:-}
AGAINST_BIN=${AGAINST_BIN:-}

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || {
    echo "redis-server and redis-benchmark are required" >&2; exit 1; }

cargo build --release --quiet
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
LAPSE_PORT=$(free_port)
REDIS_PORT=$(free_port)
# Both servers in empty directories: a dump.rdb here would be loaded.
LAPSE_DIR=$(mktemp -d)
REDIS_DIR=$(mktemp -d)
# shellcheck disable=SC2086
./target/release/lapse --dir "$LAPSE_DIR" --port "$LAPSE_PORT" --loglevel warning --save "" $LAPSE_ARGS &
LAPSE_PID=$!
if [ -n "$AGAINST_BIN" ]; then
    "$AGAINST_BIN" --dir "$REDIS_DIR" --port "$REDIS_PORT" --loglevel warning --save "" &
    B_NAME="lapse (other build)"
elif [ -n "$AGAINST" ]; then
    # shellcheck disable=SC2086
    ./target/release/lapse --dir "$REDIS_DIR" --port "$REDIS_PORT" --loglevel warning --save "" $AGAINST &
    B_NAME="lapse $AGAINST"
else
    redis-server --dir "$REDIS_DIR" --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --loglevel warning &
    B_NAME=redis
fi
REDIS_PID=$!
trap 'kill $LAPSE_PID $REDIS_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$LAPSE_DIR" "$REDIS_DIR"' EXIT
for port in "$LAPSE_PORT" "$REDIS_PORT"; do
    until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
done

# Scripts for the eval1 / eval10 / lock tests (issue 14's targets): one
# command, ten commands, and a lock's compare-and-delete release by SHA.
EVAL1="return redis.call('set', KEYS[1], ARGV[1])"
EVAL10="for i = 1, 5 do redis.call('set', KEYS[1], ARGV[1]) redis.call('get', KEYS[1]) end return 1"
LOCK="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
LOCK_SHA=$(redis-cli -p "$LAPSE_PORT" script load "$LOCK")
redis-cli -p "$REDIS_PORT" script load "$LOCK" >/dev/null
# XREADGROUP of one new entry and its XACK, for xreadgroup_ack.
ACK="local r = redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', '1', 'STREAMS', KEYS[1], '>') if r then redis.call('XACK', KEYS[1], 'g', r[1][2][1][1]) end return 1"
ACK_SHA=$(redis-cli -p "$LAPSE_PORT" script load "$ACK")
redis-cli -p "$REDIS_PORT" script load "$ACK" >/dev/null
for port in "$LAPSE_PORT" "$REDIS_PORT"; do
    redis-cli -p "$port" XGROUP CREATE st g '$' MKSTREAM >/dev/null
done

# One redis-benchmark run; prints "rps p50 p99".
run() {
    local port=$1 test=$2 pipeline=$3
    local args=(-p "$port" -c "$CLIENTS" -n "$REQUESTS" -r "$KEYSPACE" -P "$pipeline" --csv)
    case $test in
        ping) args+=(-t ping_mbulk) ;;
        setex) args+=(SET "key:__rand_int__" "0123456789abcdef" EX 3600) ;;
        eval1) args+=(EVAL "$EVAL1" 1 "key:__rand_int__" v) ;;
        eval10) args+=(EVAL "$EVAL10" 1 "key:__rand_int__" v) ;;
        lock) args+=(EVALSHA "$LOCK_SHA" 1 "lock:__rand_int__" token) ;;
        # Small values (issue 23): 10-field hashes on KEYSPACE keys; run
        # hset10 first, it fills them for hget and hgetall.
        hset10) args+=(HSET "h:__rand_int__" $(for j in $(seq 0 9); do printf 'field%d value%04d ' "$j" "$((j * 37))"; done)) ;;
        hget) args+=(HGET "h:__rand_int__" field5) ;;
        hgetall) args+=(HGETALL "h:__rand_int__") ;;
        # 10-integer sets (intsets), filled by sadd10.
        sadd10) args+=(SADD "s:__rand_int__" 0 1 2 3 4 5 6 7 8 9) ;;
        sismember) args+=(SISMEMBER "s:__rand_int__" 5) ;;
        smembers) args+=(SMEMBERS "s:__rand_int__") ;;
        # Lists on KEYSPACE keys, 10 elements per LPUSH (they grow by 10 per
        # keyspace's worth of requests); lrange10 reads the first 10.
        lpush10) args+=(LPUSH "l:__rand_int__" $(for j in $(seq 0 9); do printf 'item:%d ' "$j"; done)) ;;
        lrange10) args+=(LRANGE "l:__rand_int__" 0 9) ;;
        # 10-member sorted sets, filled by zadd10.
        zadd10) args+=(ZADD "z:__rand_int__" $(for j in $(seq 0 9); do printf '%d member:%d ' "$j" "$j"; done)) ;;
        zscore) args+=(ZSCORE "z:__rand_int__" member:5) ;;
        zrange) args+=(ZRANGE "z:__rand_int__" 0 -1 WITHSCORES) ;;
        # Issue 20's families. Bitmaps: 1,000 per-entity bitmaps of 100,000
        # bits (redis-benchmark's __rand_int__ has leading zeros, which no
        # offset may have, so it picks the key); run setbit first.
        setbit) args+=(-r 1000 SETBIT "bm:__rand_int__" 99999 1) ;;
        getbit) args+=(-r 1000 GETBIT "bm:__rand_int__" 99999) ;;
        bitcount) args+=(-r 1000 BITCOUNT "bm:__rand_int__") ;;
        bitcount_range) args+=(-r 1000 BITCOUNT "bm:__rand_int__" 100 1000) ;;
        bitfield) args+=(-r 1000 BITFIELD "bm:__rand_int__" INCRBY u8 800 1 GET i16 64) ;;
        # HyperLogLog: PFADD grows hll past the sparse limit; pfcount_cached
        # reads its cached count, pfcount2 unions two (computed each time).
        pfadd) args+=(PFADD hll "e:__rand_int__") ;;
        pfadd_sparse) args+=(PFADD "hll:__rand_int__" a b c) ;;
        pfcount_cached) args+=(PFCOUNT hll) ;;
        pfcount2) args+=(PFCOUNT hll "hll:1") ;;
        # Geo: points spread over a 1-degree square ("000000123456e-6" is
        # 0.123456: __rand_int__ scaled), then the 10 nearest within 1 km
        # of its middle (about a hundred candidates each).
        geoadd) args+=(GEOADD geo "__rand_int__e-6" "__rand_int__e-6" "m:__rand_int__") ;;
        geosearch) args+=(GEOSEARCH geo FROMLONLAT 0.5 0.5 BYRADIUS 1 km COUNT 10 ASC) ;;
        geodist) args+=(GEODIST geo m:1 m:2) ;;
        # Streams: XADD with auto IDs; then one consumer group reading one
        # new entry and acknowledging it per call (one script, the same on
        # both servers). Run xadd first.
        xadd) args+=(XADD st "*" type email user "__rand_int__" payload 0123456789abcdef0123456789abcdef) ;;
        xreadgroup_ack) args+=(EVALSHA "$ACK_SHA" 1 st) ;;
        *) args+=(-t "$test") ;;
    esac
    redis-benchmark "${args[@]}" 2>/dev/null | tail -1 |
        tr -d '"' | awk -F, '{print $(NF-6), $(NF-3), $(NF-1)}'
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '| test | -P | lapse rps | %s rps | ratio | lapse p50/p99 ms | %s p50/p99 ms |\n' "$B_NAME" "$B_NAME"
printf '|---|---|---|---|---|---|---|\n'
for test in $TESTS; do
    for pipeline in $PIPELINES; do
        lapse_runs=(); redis_runs=()
        for pair in $(seq 1 "$PAIRS"); do
            if (( pair % 2 )); then
                lapse_runs+=("$(run "$LAPSE_PORT" "$test" "$pipeline")")
                redis_runs+=("$(run "$REDIS_PORT" "$test" "$pipeline")")
            else
                redis_runs+=("$(run "$REDIS_PORT" "$test" "$pipeline")")
                lapse_runs+=("$(run "$LAPSE_PORT" "$test" "$pipeline")")
            fi
        done
        col() { local n=$1; shift; printf '%s\n' "$@" | awk -v n="$n" '{print $n}' | median; }
        l_rps=$(col 1 "${lapse_runs[@]}"); r_rps=$(col 1 "${redis_runs[@]}")
        printf '| %s | %s | %.0f | %.0f | %.2f | %s/%s | %s/%s |\n' "$test" "$pipeline" \
            "$l_rps" "$r_rps" "$(echo "$l_rps / $r_rps" | bc -l)" \
            "$(col 2 "${lapse_runs[@]}")" "$(col 3 "${lapse_runs[@]}")" \
            "$(col 2 "${redis_runs[@]}")" "$(col 3 "${redis_runs[@]}")"
    done
done
