#!/bin/bash
# Server CPU per request, lapse beside redis-server (and, with
# AGAINST_BIN, another lapse build or any server binary taking --port),
# one command per round trip: `redis-benchmark -c 50 -P $PIPELINE`.
# CPU is the server process's user+system time from /proc/<pid>/stat
# over the run, divided by the requests. PAIRS rounds, interleaved.
#
#   benches/cpu_per_request.sh
#   PAIRS=5 TESTS="set get" PIPELINE=16 benches/cpu_per_request.sh
#   AGAINST_BIN=/path/to/older/lapse benches/cpu_per_request.sh
#   VALKEY=/path/to/valkey-server benches/cpu_per_request.sh  # a third server
#       (benches/build_valkey.sh builds Valkey 8.0.1)
#   TLS=1 PIPELINE=16 benches/cpu_per_request.sh   # both over TLS (mutual)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3}
REQUESTS=${REQUESTS:-300000}
TESTS=${TESTS:-"set get"}
PIPELINE=${PIPELINE:-1}
AGAINST_BIN=${AGAINST_BIN:-}
VALKEY=${VALKEY:-}
TLS=${TLS:-}
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is needed (apt-get install -y redis-tools)"; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server is needed (apt-get install -y redis-server)"; exit 1; }
cargo build --release --bin lapse >/dev/null 2>&1
LAPSE=target/release/lapse
HZ=$(getconf CLK_TCK)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# With TLS: a CA, a server and a client certificate (as Redis's
# utils/gen-test-certs.sh makes them); the servers listen on TLS only.
server_tls=() client_tls=()
if [ -n "$TLS" ]; then
    CERTS=$(mktemp -d)
    (
        cd "$CERTS"
        openssl genrsa -out ca.key 2048 2>/dev/null
        openssl req -x509 -new -nodes -sha256 -key ca.key -days 30 -subj "/O=bench/CN=ca" -out ca.crt
        for name in server client; do
            openssl genrsa -out $name.key 2048 2>/dev/null
            openssl req -new -sha256 -subj "/O=bench/CN=$name" -key $name.key -out $name.csr
            printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" > $name.ext
            openssl x509 -req -sha256 -in $name.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
                -days 30 -extfile $name.ext -out $name.crt 2>/dev/null
        done
    )
    server_tls=(--tls-cert-file "$CERTS/server.crt" --tls-key-file "$CERTS/server.key"
        --tls-ca-cert-file "$CERTS/ca.crt")
    client_tls=(--tls --cacert "$CERTS/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key")
fi

# Every server starts in an empty directory of its own: a dump.rdb left
# in the working directory would be loaded first (and answer LOADING).
RUNDIR=$(mktemp -d)
trap 'rm -rf "$RUNDIR" ${CERTS:+"$CERTS"}' EXIT

# listen PORT: the server's arguments to serve on PORT (TLS alone with
# TLS), in the empty directory.
listen() {
    if [ -n "$TLS" ]; then echo "--dir $RUNDIR --port 0 --tls-port $1"; else echo "--dir $RUNDIR --port $1"; fi
}

# run NAME TEST: prints "rps cpu_us_per_request"
run() {
    local name=$1 test=$2 port pid t0 t1 rps
    port=$(free_port)
    # shellcheck disable=SC2046
    case $name in
        redis) redis-server $(listen "$port") "${server_tls[@]}" --save "" --appendonly no >/dev/null 2>&1 & pid=$! ;;
        other) "$AGAINST_BIN" $(listen "$port") "${server_tls[@]}" --save "" >/dev/null 2>&1 & pid=$! ;;
        valkey) "$VALKEY" $(listen "$port") "${server_tls[@]}" --save "" --appendonly no >/dev/null 2>&1 & pid=$! ;;
        *) "$LAPSE" $(listen "$port") "${server_tls[@]}" --save "" >/dev/null 2>&1 & pid=$! ;;
    esac
    for _ in $(seq 50); do redis-cli -p "$port" "${client_tls[@]}" ping >/dev/null 2>&1 && break; sleep 0.05; done
    t0=$(awk '{print $14+$15}' /proc/$pid/stat)
    rps=$(redis-benchmark -p "$port" "${client_tls[@]}" -t "$test" -n "$REQUESTS" -c 50 -P "$PIPELINE" -q 2>/dev/null \
        | tr '\r' '\n' | grep "requests per second" | tail -1 | awk '{print $2}')
    t1=$(awk '{print $14+$15}' /proc/$pid/stat)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    [ -n "$rps" ] || { echo "$name: redis-benchmark gave no result" >&2; exit 1; }
    python3 -c "print($rps, round(($t1-$t0)/$HZ*1e6/$REQUESTS, 2))"
}

median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" $1; }

servers="lapse"
[ -n "$AGAINST_BIN" ] && servers="$servers other"
[ -n "$VALKEY" ] && servers="$servers valkey"
servers="$servers redis"
echo "| test | -P | server | rps (median) | CPU µs/request (median) | CPU ratio to redis-server | CPU ratio to valkey |"
echo "|---|---|---|---|---|---|---|"
for test in $TESTS; do
    declare -A rps=() cpu=()
    for _ in $(seq "$PAIRS"); do
        for s in $servers; do
            read -r r c < <(run "$s" "$test")
            rps[$s]="${rps[$s]:-} $r"; cpu[$s]="${cpu[$s]:-} $c"
        done
    done
    redis_cpu=$(median "${cpu[redis]}")
    valkey_cpu=""
    [ -n "$VALKEY" ] && valkey_cpu=$(median "${cpu[valkey]}")
    for s in $servers; do
        c=$(median "${cpu[$s]}")
        to_valkey=-
        [ -n "$valkey_cpu" ] && to_valkey=$(python3 -c "print(round($c/$valkey_cpu, 2))")
        echo "| $test | $PIPELINE | $s | $(median "${rps[$s]}") | $c | $(python3 -c "print(round($c/$redis_cpu, 2))") | $to_valkey |"
    done
    unset rps cpu
done
