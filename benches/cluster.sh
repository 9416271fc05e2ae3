#!/bin/bash
# Redis Cluster figures, lapse beside redis-server in one run:
#   slotcheck  one node serving all slots, cluster mode on vs off
#              (redis-benchmark -c 50, -P 1 and -P 16, SET and GET)
#   aggregate  redis-benchmark --cluster against three masters
#   reshard    moving a master's slots (with KEYS keys in the cluster) to
#              another master with redis-cli --cluster reshard: the time,
#              and the longest PING round trip to either node meanwhile
#   failover   a killed master's replica promoted: the time from the kill
#              (cluster-node-timeout NODE_TIMEOUT ms)
#
#   benches/cluster.sh
#   PARTS="reshard" KEYS=1000000 benches/cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-"slotcheck aggregate reshard failover"}
PAIRS=${PAIRS:-3}
REQUESTS=${REQUESTS:-300000}
KEYS=${KEYS:-1000000}
NODE_TIMEOUT=${NODE_TIMEOUT:-5000}
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is needed (apt-get install -y redis-tools)"; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server is needed (apt-get install -y redis-server)"; exit 1; }
cargo build --release --bin lapse >/dev/null 2>&1
LAPSE=$PWD/target/release/lapse
WORK=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; sleep 0.2; rm -rf "$WORK"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" $1; }

# start KIND PORT [cluster args...]: a node in its own directory; prints the pid.
start() {
    local kind=$1 port=$2; shift 2
    local dir=$WORK/$kind-$port
    mkdir -p "$dir"
    if [ "$kind" = redis ]; then
        (cd "$dir" && exec redis-server --port "$port" --save "" --appendonly no "$@" >/dev/null 2>&1) &
    else
        (cd "$dir" && exec "$LAPSE" --port "$port" --save "" "$@" >/dev/null 2>&1) &
    fi
    local pid=$!
    echo "$pid" > "$WORK/pid-$port"
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
    echo "$pid"
}

state_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q "cluster_state:ok"; }
wait_ok() { for p in "$@"; do for _ in $(seq 400); do state_ok "$p" && break; sleep 0.05; done; done; }

# cluster KIND N REPLICAS: N nodes made into a cluster; prints their ports.
cluster() {
    local kind=$1 n=$2 replicas=$3 ports=() addrs=()
    for _ in $(seq "$n"); do
        local p; p=$(free_port)
        start "$kind" "$p" --cluster-enabled yes --cluster-node-timeout "$NODE_TIMEOUT" \
            --cluster-port "$(free_port)" >/dev/null
        ports+=("$p"); addrs+=("127.0.0.1:$p")
    done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >/dev/null 2>&1
    wait_ok "${ports[@]}"
    echo "${ports[@]}"
}

rps_of() { tr '\r' '\n' | grep "requests per second" | awk '{print $2}' | paste -sd' '; }

if [[ " $PARTS " == *" slotcheck "* ]]; then
    echo "## One node, cluster mode on vs off (redis-benchmark -c 50 -n $REQUESTS, median of $PAIRS)"
    echo
    echo "| server | -P | SET off | SET on | on/off | GET off | GET on | on/off |"
    echo "|---|---|---|---|---|---|---|---|"
    for kind in lapse redis; do
        for pipeline in 1 16; do
            declare -A got=()
            for _ in $(seq "$PAIRS"); do
                for mode in off on; do
                    port=$(free_port)
                    if [ $mode = on ]; then
                        pid=$(start $kind "$port" --cluster-enabled yes --cluster-port "$(free_port)")
                        redis-cli -p "$port" cluster addslotsrange 0 16383 >/dev/null
                        wait_ok "$port"
                    else
                        pid=$(start $kind "$port")
                    fi
                    read -r set get < <(redis-benchmark -p "$port" -t set,get -n "$REQUESTS" -c 50 -P $pipeline -q 2>/dev/null | rps_of)
                    got[$mode-set]="${got[$mode-set]:-} $set"; got[$mode-get]="${got[$mode-get]:-} $get"
                    kill "$pid"; wait "$pid" 2>/dev/null || true
                done
            done
            so=$(median "${got[off-set]}"); sn=$(median "${got[on-set]}")
            go=$(median "${got[off-get]}"); gn=$(median "${got[on-get]}")
            python3 -c "print(f'| $kind | $pipeline | {$so:.0f} | {$sn:.0f} | {$sn/$so:.3f} | {$go:.0f} | {$gn:.0f} | {$gn/$go:.3f} |')"
            unset got
        done
    done
    echo
fi

if [[ " $PARTS " == *" aggregate "* ]]; then
    echo "## Three masters, redis-benchmark --cluster (-c 50 -n $REQUESTS, median of $PAIRS)"
    echo
    echo "| -P | lapse SET | redis SET | ratio | lapse GET | redis GET | ratio |"
    echo "|---|---|---|---|---|---|---|"
    read -r -a lp < <(cluster lapse 3 0)
    read -r -a rp < <(cluster redis 3 0)
    for pipeline in 1 16; do
        declare -A got=()
        for _ in $(seq "$PAIRS"); do
            for kind in lapse redis; do
                if [ $kind = lapse ]; then port=${lp[0]}; else port=${rp[0]}; fi
                read -r set get < <(redis-benchmark --cluster -p "$port" -t set,get -n "$REQUESTS" -c 50 -P $pipeline -q 2>/dev/null | rps_of)
                got[$kind-set]="${got[$kind-set]:-} $set"; got[$kind-get]="${got[$kind-get]:-} $get"
            done
        done
        ls=$(median "${got[lapse-set]}"); rs=$(median "${got[redis-set]}")
        lg=$(median "${got[lapse-get]}"); rg=$(median "${got[redis-get]}")
        python3 -c "print(f'| $pipeline | {$ls:.0f} | {$rs:.0f} | {$ls/$rs:.2f} | {$lg:.0f} | {$rg:.0f} | {$lg/$rg:.2f} |')"
        unset got
    done
    echo
fi

# ping_watch PORT... : PINGs every node in turn until killed; prints the
# longest round trip in ms when it gets SIGTERM.
ping_watch() {
    exec python3 - "$@" <<'EOF'
import signal, socket, sys, time
socks = []
for p in sys.argv[1:]:
    s = socket.create_connection(("127.0.0.1", int(p)))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    socks.append(s)
worst = 0.0
def done(*_):
    print(f"{worst * 1000:.1f}")
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    for s in socks:
        t = time.perf_counter()
        s.sendall(b"PING\r\n")
        s.recv(64)
        worst = max(worst, time.perf_counter() - t)
    time.sleep(0.001)
EOF
}

if [[ " $PARTS " == *" reshard "* ]]; then
    echo "## Resharding: one master's slots to another, $KEYS keys in the cluster (redis-cli --cluster reshard, default pipeline)"
    echo
    echo "| server | keys moved | slots | seconds | keys/s | longest PING round trip (ms) |"
    echo "|---|---|---|---|---|---|"
    for kind in lapse redis; do
        read -r -a ports < <(cluster $kind 3 0)
        redis-benchmark --cluster -p "${ports[0]}" -t set -r "$KEYS" -n $((KEYS * 2)) -c 50 -P 32 -q >/dev/null 2>&1
        from=$(redis-cli -p "${ports[0]}" cluster myid); to=$(redis-cli -p "${ports[1]}" cluster myid)
        moved=$(redis-cli -p "${ports[0]}" dbsize)
        ping_watch "${ports[0]}" "${ports[1]}" > "$WORK/ping-$kind" &
        watcher=$!
        t0=$(date +%s.%N)
        redis-cli --cluster reshard "127.0.0.1:${ports[0]}" --cluster-from "$from" --cluster-to "$to" \
            --cluster-slots 16384 --cluster-yes >/dev/null 2>&1
        t1=$(date +%s.%N)
        kill -TERM $watcher; wait $watcher 2>/dev/null || true
        left=$(redis-cli -p "${ports[0]}" dbsize)
        python3 -c "t=$t1-$t0; print(f'| $kind | $moved (left: $left) | 5461 | {t:.1f} | {$moved/t:.0f} | $(cat "$WORK/ping-$kind") |')"
        for p in "${ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
    done
    echo
fi

if [[ " $PARTS " == *" failover "* ]]; then
    echo "## Failover: a killed master's replica promoted (cluster-node-timeout $NODE_TIMEOUT ms)"
    echo
    echo "| server | seconds from the kill | over the node timeout |"
    echo "|---|---|---|"
    for kind in lapse redis; do
        read -r -a ports < <(cluster $kind 6 1)
        # Let every replica finish its first sync.
        for p in "${ports[@]}"; do
            for _ in $(seq 200); do
                redis-cli -p "$p" info replication | grep -q "role:master\|master_link_status:up" && break; sleep 0.05
            done
        done
        victim=${ports[0]}; victim_id=$(redis-cli -p "$victim" cluster myid)
        replica=""
        for p in "${ports[@]}"; do
            redis-cli -p "$p" cluster nodes | grep myself | grep -q "slave $victim_id" && replica=$p
        done
        pid=$(cat "$WORK/pid-$victim")
        t0=$(date +%s.%N)
        kill -9 "$pid"
        until redis-cli -p "$replica" role 2>/dev/null | head -1 | grep -q master; do sleep 0.02; done
        t1=$(date +%s.%N)
        python3 -c "t=$t1-$t0; print(f'| $kind | {t:.2f} | {t - $NODE_TIMEOUT/1000:.2f} |')"
        for p in "${ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
    done
    echo
fi
