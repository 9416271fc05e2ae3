"""What the Python benchmark scripts share: RESP encoding, one-shot
commands, pipelined fills, free ports, a process's RSS and CPU time,
redis-benchmark runs, and starting lapse or redis-server side by side on
a fresh port."""

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
        # Valkey 8.0.1 as benches/build_valkey.sh builds it.
        "valkey": [VALKEY, "--port", str(port), "--save", "", "--appendonly", "no"],
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


BATCH = 1000


def pipeline(port, commands):
    """Sends `commands` in batches, each followed by a PING whose reply
    (after all of theirs) tells the batch is done."""
    s = socket.create_connection(("127.0.0.1", port))
    for i in range(0, len(commands), BATCH):
        chunk = commands[i:i + BATCH]
        s.sendall(b"".join(enc(c) for c in chunk) + enc(["PING"]))
        data = b""
        while not data.endswith(b"+PONG\r\n"):
            data += s.recv(1 << 20)
    s.close()


def cpu_seconds(pid):
    """The process's time on a CPU so far, all its threads, in seconds
    (/proc/<pid>/task/*/schedstat: nanoseconds, where /proc/<pid>/stat
    counts 10 ms ticks, too coarse for a run of a fraction of a second)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return total / 1e9


def rps(proc, port, test, requests=1000000, pipeline_depth=16, keyspace=100000):
    """redis-benchmark's requests per second for `test` (a command, or a
    list of commands: `requests` of them in all, as many of each, the rate
    their whole time gives), and the server's CPU time per request
    meanwhile (ns): the client shares the machine's two cores, so the
    second is the steadier figure of the server's cost."""
    commands = test if isinstance(test[0], list) else [test]
    each = requests // len(commands)
    before = cpu_seconds(proc.pid)
    seconds = 0.0
    for command in commands:
        res = subprocess.run(["redis-benchmark", "-p", str(port), "-P", str(pipeline_depth),
                              "-r", str(keyspace), "-n", str(each), "-q"] + command,
                             capture_output=True, text=True).stdout
        line = [l for l in res.replace("\r", "\n").split("\n") if "requests per second" in l][-1]
        seconds += each / float(line.rsplit(": ", 1)[1].split()[0])
    cpu_ns = (cpu_seconds(proc.pid) - before) * 1e9 / (each * len(commands))
    return each * len(commands) / seconds, cpu_ns


VALKEY = os.environ.get("VALKEY", os.path.join(ROOT, "target", "valkey-8.0.1", "valkey-server"))
LOADGEN = os.path.join(ROOT, "benches", "loadgen", "target", "release", "loadgen")


def build_loadgen():
    """benches/loadgen, a client lighter than redis-benchmark (its own
    crate: mio is its one dependency)."""
    subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path",
                    os.path.join(ROOT, "benches", "loadgen", "Cargo.toml")], check=True)


def loadgen_rps(proc, port, command, requests=2000000, pipeline_depth=16, keyspace=100000,
                connections=50):
    """As `rps`, with benches/loadgen as the client: it spends ~0.1 us of
    user time a request where redis-benchmark spends 0.2-0.4 (building
    each request, a reply object per array element), so on two cores the
    server, not the client, sets the rate."""
    before = cpu_seconds(proc.pid)
    res = subprocess.run([LOADGEN, str(port), str(connections), str(pipeline_depth),
                          str(requests), str(keyspace), "--"] + command,
                         capture_output=True, text=True, check=True).stdout
    cpu_ns = (cpu_seconds(proc.pid) - before) * 1e9 / requests
    return float(res.split()[0]), cpu_ns


def side_by_side(name, runs, a, b):
    """Runs `a` and `b` (each a function returning (rps, cpu ns)) `runs`
    times, which goes first alternating (a drift of the machine's load
    then favours neither); prints both and the median ratios (a/b for
    rate, b/a for CPU: above 1 means `a` is ahead on both)."""
    pairs = []
    for i in range(runs):
        if i % 2 == 0:
            pairs.append((a(), b()))
        else:
            second, first = b(), a()
            pairs.append((first, second))
    ratios = sorted(x[0] / y[0] for x, y in pairs)
    cpu = sorted(y[1] / x[1] for x, y in pairs)
    print("%s: requests/s %s; median %.2f. Server CPU ns/request %s; median ratio %.2f" % (
        name, ", ".join("%.0f/%.0f" % (x[0], y[0]) for x, y in pairs), ratios[len(ratios) // 2],
        ", ".join("%.0f/%.0f" % (x[1], y[1]) for x, y in pairs), cpu[len(cpu) // 2]), flush=True)
