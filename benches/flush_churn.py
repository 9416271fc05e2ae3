#!/usr/bin/env python3
"""FLUSHALL ASYNC every second under 8 pipelined writers (issue 22, fault
3): peak and final RSS, the most objects waiting for the lazy-free thread
(INFO lazyfree_pending_objects, sampled each second) and the slowest PING
(one every 10 ms: the 99th percentile and the slowest), for one server.

    benches/flush_churn.py lapse 60
    D=512 benches/flush_churn.py redis 60      # value size, default 3
"""
import os
import socket
import subprocess
import sys
import time

from benchlib import build, cmd, info_field, rss, start, stop

server = sys.argv[1]
secs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
build()
p, port = start(server)
bench = subprocess.Popen(
    ["redis-benchmark", "-p", str(port), "-c", "8", "-n", "100000000", "-r", "10000000",
     "-P", "16", "-t", "set", "-d", os.environ.get("D", "3"), "-q"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = pend_max = 0
pings = []
start_t = time.time()
ps = socket.create_connection(("127.0.0.1", port))
while time.time() - start_t < secs:
    if not os.environ.get("NOFLUSH"):
        cmd(port, "FLUSHALL", "ASYNC")
    t_end = time.time() + 1
    while time.time() < t_end:
        t = time.time()
        ps.sendall(b"*1\r\n$4\r\nPING\r\n")
        ps.recv(100)
        pings.append(time.time() - t)
        time.sleep(0.01)
    peak = max(peak, rss(p.pid))
    pending = info_field(port, "lazyfree_pending_objects", "memory")
    if pending and pending.isdigit():
        pend_max = max(pend_max, int(pending))
pings.sort()
print("%s: %ds FLUSHALL ASYNC churn: peak RSS %.0f MB, final RSS %.0f MB, max pending %d, "
      "PING p99 %.2f ms, worst %.1f ms (%d PINGs)"
      % (server, secs, peak / 1e6, rss(p.pid) / 1e6, pend_max,
         pings[int(len(pings) * 0.99)] * 1000, pings[-1] * 1000, len(pings)))
bench.kill()
stop(p)
