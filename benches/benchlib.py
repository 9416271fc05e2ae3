"""What the Python benchmark scripts share: RESP encoding, one-shot
commands, free ports, a process's RSS, and starting lapse or redis-server
side by side on a fresh port."""

import os
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAPSE = os.path.join(ROOT, "target", "release", "lapse")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)


def enc(args):
    """A request as RESP (what clients send)."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def cmd(port, *args):
    """One command on a fresh connection; its raw reply (up to 1 MB)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(enc(args))
    reply = s.recv(1 << 20)
    s.close()
    return reply


def info_field(port, field, section="all"):
    text = cmd(port, "INFO", section).decode(errors="replace")
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    return None


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        return int([l for l in f if l.startswith("VmRSS:")][0].split()[1]) * 1024


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(server, port=None, extra=(), **popen):
    """Starts "lapse" or "redis" (no persistence, in an empty directory of
    its own, so that no dump.rdb is loaded or left behind) on `port` (a free
    one by default) and waits until it answers; returns (process, port)."""
    port = port or free_port()
    run_dir = tempfile.mkdtemp(prefix="bench-%s-" % server)
    argv = {
        "lapse": [LAPSE, "--port", str(port), "--save", ""],
        # REDIS_SERVER: another redis-server than the one on PATH (a 7.4
        # build, say).
        "redis": [os.environ.get("REDIS_SERVER", "redis-server"), "--port", str(port), "--save", "",
                  "--appendonly", "no"],
    }[server] + ["--dir", run_dir] + list(extra)
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=None if os.environ.get("SHOW_STDERR") else subprocess.DEVNULL, **popen)
    deadline = time.time() + 10
    while True:
        try:
            cmd(port, "PING")
            return proc, port
        except OSError:
            if time.time() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)


def stop(proc):
    proc.terminate()
    proc.wait()
