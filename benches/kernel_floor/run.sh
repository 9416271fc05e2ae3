#!/bin/bash
# The kernel's floor at -P 1: server CPU per request (user and system, from
# /proc/<pid>/stat) of two bare PING responders that do nothing else, one
# on epoll (mio) and one on io_uring (recv and send submitted together, one
# io_uring_enter per loop turn, single issuer, deferred task work), beside
# lapse and redis-server; `redis-benchmark -t ping_mbulk -c 50 -P 1`,
# three rounds. Issue 41: what a server's own work can still win at -P 1.
#
#   benches/kernel_floor/run.sh
#   SRVS="epoll uring" N=100000 benches/kernel_floor/run.sh
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release -q
BIN=$PWD/target/release/kernel_floor
LAPSE=${LAPSE:-$PWD/../../target/release/lapse}
[ -x "$LAPSE" ] || (cd ../.. && cargo build --release -q --bin lapse)
N=${N:-300000}
for rep in 1 2 3; do
for srv in ${SRVS:-epoll uring multishot lapse redis}; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  case $srv in
    epoll|uring|multishot) "$BIN" $srv $port & ;;
    lapse) "$LAPSE" --port $port --save "" >/dev/null 2>&1 & ;;
    redis) redis-server --port $port --save "" --appendonly no >/dev/null 2>&1 & ;;
  esac
  pid=$!; sleep 0.4
  a=$(awk '{print $14, $15}' /proc/$pid/stat)
  rps=$(redis-benchmark -p $port -t ping_mbulk -n $N -c 50 -P 1 -q 2>/dev/null | tr '\r' '\n' | grep "per second" | tail -1 | awk '{print $2}')
  b=$(awk '{print $14, $15}' /proc/$pid/stat)
  kill $pid; wait $pid 2>/dev/null || true
  echo "$srv $rps $a $b" | awk -v n=$N '{printf "%-6s rps %8s user %.2f sys %.2f total %.2f us/request\n", $1, $2, ($5-$3)*10000/n, ($6-$4)*10000/n, ($5-$3+$6-$4)*10000/n}'
done; done
