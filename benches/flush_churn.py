#!/usr/bin/env python3
"""FLUSHALL ASYNC every second under 8 pipelined writers (issue 22, fault
3): peak and final RSS, the most objects waiting for the lazy-free thread
(INFO lazyfree_pending_objects, sampled each second) and the slowest PING
(one every 10 ms), for one server.

    benches/flush_churn.py lapse 60
    D=512 benches/flush_churn.py redis 60      # value size, default 3
"""
import socket, subprocess, time, sys, os
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def enc(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
def cmd(port, *args):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(enc(args)); d = s.recv(1<<20); s.close(); return d
def info(port, field):
    d = cmd(port, "INFO", "all").decode(errors="replace")
    for l in d.split("\r\n"):
        if l.startswith(field + ":"): return l.split(":")[1]
    return "?"
def rss(pid):
    return int([l for l in open("/proc/%d/status" % pid) if l.startswith("VmRSS:")][0].split()[1]) * 1024
server = sys.argv[1]; secs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
port = 7431
argv = {"lapse": [ROOT + "/target/release/lapse", "--port", str(port)], "redis": ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"]}[server]
p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
bench = subprocess.Popen(["redis-benchmark", "-p", str(port), "-c", "8", "-n", "100000000", "-r", "10000000", "-P", "16", "-t", "set", "-d", os.environ.get("D", "3"), "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = 0; worst_ping = 0; pend_max = 0
start = time.time()
ps = socket.create_connection(("127.0.0.1", port))
while time.time() - start < secs:
    cmd(port, "FLUSHALL", "ASYNC")
    t_end = time.time() + 1
    while time.time() < t_end:
        t = time.time(); ps.sendall(b"*1\r\n$4\r\nPING\r\n"); ps.recv(100); worst_ping = max(worst_ping, time.time() - t)
        time.sleep(0.01)
    r = rss(p.pid); peak = max(peak, r)
    pend = info(port, "lazyfree_pending_objects"); 
    try: pend_max = max(pend_max, int(pend))
    except: pass
print("%s: %ds FLUSHALL ASYNC churn: peak RSS %.0f MB, final RSS %.0f MB, max pending %d, worst PING %.1f ms" % (server, secs, peak/1e6, rss(p.pid)/1e6, pend_max, worst_ping*1000))
bench.kill(); p.terminate(); p.wait()
