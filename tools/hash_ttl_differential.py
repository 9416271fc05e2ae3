#!/usr/bin/env python3
"""Random differential of small hashes with field deadlines: lapse against
a real redis-server 7.4 or later (Debian has none, so this is not in CI;
build one from the redis repository: `git archive 7.4.1 | tar -x; make
MALLOC=libc`).

    tools/hash_ttl_differential.py <lapse port> <redis port> [seed] [steps] [entries]

Runs the same random HSET, HPEXPIREAT (NX XX GT LT; now and then a
deadline already past, which deletes), HPERSIST, HDEL, HINCRBY and HSETNX
on three hashes of up to 8 fields on both, other deadlines an hour ahead
(none falls due meanwhile), and after each step compares the reply,
HGETALL (Redis 7.4's field order while packed; sorted once a hash is a
table, whose order is its hash function's), every field's HPEXPIRETIME
and OBJECT ENCODING. `entries` sets hash-max-listpack-entries on both
(default 128: the hashes stay packed; 4 makes them tables too). Prints
each difference (stops after 5) and the count; exits 1 if any. Both
servers are flushed first.
"""
import random
import socket
import sys
import time


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def read_reply(f):
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+", b"-"):
        return (kind + rest).decode()
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2].decode()
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise ValueError("unexpected reply %r" % line)


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def __call__(self, *args):
        self.sock.sendall(encode(args))
        return read_reply(self.file)


def random_command(rng, deadline_base):
    key = "h%d" % rng.randrange(3)
    fields = ["f%d" % rng.randrange(8) for _ in range(rng.randrange(1, 4))]
    at = deadline_base + rng.randrange(3) * 1000
    op = rng.randrange(7)
    if op == 0:
        pairs = sum([[f, "v%d" % rng.randrange(100)] for f in fields], [])
        return ["HSET", key] + pairs
    if op == 1:
        if rng.randrange(10) == 0:
            at = 1
        return ["HPEXPIREAT", key, at, "FIELDS", len(fields)] + fields
    if op == 2:
        return ["HPERSIST", key, "FIELDS", len(fields)] + fields
    if op == 3:
        return ["HDEL", key] + fields
    if op == 4:
        return ["HINCRBY", key, fields[0], 1]
    if op == 5:
        condition = rng.choice(["NX", "XX", "GT", "LT"])
        return ["HPEXPIREAT", key, at, condition, "FIELDS", len(fields)] + fields
    return ["HSETNX", key, fields[0], "n"]


def main():
    lapse, redis = Client(int(sys.argv[1])), Client(int(sys.argv[2]))
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 3000
    entries = sys.argv[5] if len(sys.argv) > 5 else "128"
    deadline_base = int(time.time() * 1000) + 3_600_000
    every_field = ["f%d" % i for i in range(8)]
    for c in (lapse, redis):
        c("FLUSHALL")
        c("CONFIG", "SET", "hash-max-listpack-entries", entries)
    differences = 0
    for step in range(steps):
        command = random_command(rng, deadline_base)
        key = command[1]
        seen = []
        for c in (lapse, redis):
            reply = c(*command)
            pairs = c("HGETALL", key)
            encoding = c("OBJECT", "ENCODING", key)
            if encoding == "hashtable":
                pairs = sorted(zip(pairs[::2], pairs[1::2]))
            seen.append((
                reply,
                pairs,
                c("HPEXPIRETIME", key, "FIELDS", len(every_field), *every_field),
                encoding,
            ))
        if seen[0] != seen[1]:
            differences += 1
            print("step %d: %s\n  lapse %s\n  redis %s" % (step, command, seen[0], seen[1]))
            if differences >= 5:
                break
    print("%d steps, %d differences" % (step + 1, differences))
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
