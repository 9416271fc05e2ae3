#!/usr/bin/env python3
"""10,000 clients each sending half a request, then silent (issue 22,
fault 7): the server's RSS growth 1 s and 4.5 s later, lapse and
redis-server side by side (raises its own open-files limit).

    benches/slowloris.py
"""
import resource
import socket
import time

from benchlib import build, rss, start, stop

resource.setrlimit(resource.RLIMIT_NOFILE, (20000, 20000))
build()
for name in ("lapse", "redis"):
    extra = ["--maxclients", "20000"] if name == "redis" else []
    p, port = start(name, extra=extra,
                    preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (20000, 20000)))
    base = rss(p.pid)
    socks = []
    for _ in range(10000):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$100\r\nabc")
        socks.append(s)
    time.sleep(1)
    mid = rss(p.pid)
    time.sleep(3.5)
    late = rss(p.pid)
    print("%s: +%.1f MB after 1 s, +%.1f MB after 4.5 s (10,000 half requests)"
          % (name, (mid - base) / 1e6, (late - base) / 1e6))
    for s in socks:
        s.close()
    stop(p)
