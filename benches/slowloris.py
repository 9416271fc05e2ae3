#!/usr/bin/env python3
"""10,000 clients each sending half a request, then silent (issue 22,
fault 7): the server's RSS growth 1 s and 4.5 s later, lapse and
redis-server side by side (port 7421; raises its own open-files limit).

    benches/slowloris.py
"""
import socket, subprocess, time, sys, resource
resource.setrlimit(resource.RLIMIT_NOFILE, (20000, 20000))
def rss(pid):
    return int([l for l in open("/proc/%d/status" % pid) if l.startswith("VmRSS:")][0].split()[1]) * 1024
for name, argv in [("lapse", [__import__("os").path.join(__import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__))), "target", "release", "lapse"), "--port", "7421"]), ("redis", ["redis-server", "--port", "7421", "--save", "", "--appendonly", "no", "--maxclients", "20000"])]:
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (20000, 20000)))
    time.sleep(0.5)
    base = rss(p.pid)
    socks = []
    for i in range(10000):
        s = socket.create_connection(("127.0.0.1", 7421))
        s.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$100\r\nabc")
        socks.append(s)
    time.sleep(1)
    mid = rss(p.pid)
    time.sleep(3.5)
    late = rss(p.pid)
    print("%s: +%.1f MB after 1 s, +%.1f MB after 4.5 s (10,000 half requests)" % (name, (mid - base) / 1e6, (late - base) / 1e6))
    for s in socks: s.close()
    p.terminate(); p.wait()
