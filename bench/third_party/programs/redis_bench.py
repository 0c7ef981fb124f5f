"""Redis (Debian's redis-server, on jemalloc) under its own benchmark client, redis-benchmark.

Starts redis-server as a child of this driver on a private unix socket (in a 0700 temporary
directory; no TCP port), with persistence off (`--save '' --appendonly no`), loads KEYS keys
`key:%012d` (the names redis-benchmark's `-r` draws) with values of SIZE bytes (a Lua script
run by the server, EVAL), then runs a read phase: redis-benchmark GET on random keys of the first
HOT % of them (`-r`), REQUESTS requests from CLIENTS connections pipelining PIPELINE each.
The server holds each key as a dict entry, a key and a value string and an object header, all
from jemalloc (250,000 keys with 512-B values: some 200 MiB);
redis-benchmark itself holds a few MiB.

Under `objtier compare` the measured program is this driver; the server and the client are its
children, so they run in the same memory cgroup, and with `--follow-forks` the runtime records
and places each of them (the plan has one section per program: the server's is the one that
matters).

Checks: the server holds exactly KEYS keys after the load and after the read phase, sampled
values read back equal what was written, and redis-benchmark exits 0. Prints `FOM
redis=<GET requests per second> req/s time=<seconds of the read phase>` and a line with the
client's latency percentiles; exits 3 when a check fails, 2 when the server cannot be started.
`--perturb` deletes one key after the load, so that the checks must fail (for testing them).

    python redis_bench.py [--keys 250000] [--size 512] [--requests 500000] [--hot 100]
                          [--clients 4] [--pipeline 16] [--perturb]
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BATCH = 50_000          # keys per load script call
START_TIMEOUT_S = 20.0


class CheckFailed(Exception):
    pass


def value_of(i: int, size: int) -> bytes:
    stem = b"%012d:" % i
    return (stem * (size // len(stem) + 1))[:size]


def bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


def command(*parts: bytes) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(bulk(p) for p in parts)


class Connection:
    """A minimal RESP client on the server's unix socket (replies read as raw lines)."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(str(path))
        self.reader = self.sock.makefile("rb")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()

    def reply(self) -> bytes | int | None:
        line = self.reader.readline()
        if not line:
            raise CheckFailed("the server closed the connection")
        kind, body = line[:1], line[1:-2]
        if kind == b"-":
            raise CheckFailed(f"server error: {body.decode(errors='replace')}")
        if kind == b":":
            return int(body)
        if kind == b"$":
            n = int(body)
            return None if n < 0 else self.reader.read(n + 2)[:-2]
        return body

    def call(self, *parts: bytes) -> bytes | int | None:
        self.sock.sendall(command(*parts))
        return self.reply()


def last_line(path: Path) -> str:
    try:
        return (path.read_text(errors="replace").strip().splitlines() or ["no message"])[-1]
    except OSError:
        return "no log"


def start_server(redis: str, sock: Path, workdir: Path) -> subprocess.Popen:
    """redis-server on sock, its log in workdir/redis.log (read back when it fails)."""
    log = workdir / "redis.log"
    server = subprocess.Popen(
        [redis, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--save", "", "--appendonly", "no", "--dir", str(workdir), "--daemonize", "no",
         "--loglevel", "warning", "--logfile", str(log)],
        stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise OSError(f"redis-server exited with status {server.returncode}: "
                          f"{last_line(log)}")
        try:
            conn = Connection(sock)
            if conn.call(b"PING") == b"PONG":
                conn.close()
                return server
            conn.close()
        except OSError:
            pass
        time.sleep(0.05)
    server.kill()
    server.wait()
    raise OSError(f"redis-server did not answer within {START_TIMEOUT_S:g} s")


#: SET key:%012d to value_of(i, size) for i in [ARGV[1], ARGV[2]), inside the server
LOAD_SCRIPT = b"""
local size = tonumber(ARGV[3])
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) - 1 do
  local stem = string.format('%012d:', i)
  local value = string.sub(string.rep(stem, math.floor(size / #stem) + 1), 1, size)
  redis.call('SET', string.format('key:%012d', i), value)
end
return 0
"""


def load(conn: Connection, keys: int, size: int) -> None:
    """The keys, BATCH at a time, by a Lua script in the server (a Python pipeline of SETs
    took longer than the read phase)."""
    for first in range(0, keys, BATCH):
        last = min(keys, first + BATCH)
        if conn.call(b"EVAL", LOAD_SCRIPT, b"0", b"%d" % first, b"%d" % last,
                     b"%d" % size) != 0:
            raise CheckFailed("the load script failed")


def check(conn: Connection, keys: int, size: int, when: str, rng: random.Random) -> None:
    held = conn.call(b"DBSIZE")
    if held != keys:
        raise CheckFailed(f"{when}: the server holds {held} keys, expected {keys}")
    for i in rng.sample(range(keys), min(keys, 200)):
        if conn.call(b"GET", b"key:%012d" % i) != value_of(i, size):
            raise CheckFailed(f"{when}: key:{i:012d} does not hold its value")


def read_phase(client: str, sock: Path, args: argparse.Namespace) -> tuple[dict, float]:
    """redis-benchmark GET; returns its CSV row and the phase's wall time (s)."""
    keyspace = max(1, args.keys * args.hot // 100)
    cmd = [client, "-s", str(sock), "-t", "get", "-n", str(args.requests), "-r", str(keyspace),
           "-c", str(args.clients), "-P", str(args.pipeline), "-d", str(args.size), "--csv"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise CheckFailed(f"redis-benchmark exited with status {done.returncode}: {last}")
    rows = [r for r in csv.DictReader(io.StringIO(done.stdout)) if r.get("test") == "GET"]
    if len(rows) != 1:
        raise CheckFailed(f"redis-benchmark printed no GET result: {done.stdout[:200]!r}")
    return rows[0], seconds


def stop_server(server: subprocess.Popen, sock: Path) -> None:
    if server.poll() is None:
        try:
            conn = Connection(sock)
            conn.sock.sendall(command(b"SHUTDOWN", b"NOSAVE"))
            conn.close()
            server.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            server.kill()
            server.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=250_000)
    parser.add_argument("--size", type=int, default=512, help="value bytes (512)")
    parser.add_argument("--requests", type=int, default=500_000, help="GETs (500,000)")
    parser.add_argument("--hot", type=int, default=100,
                        help="GETs draw from the first HOT %% of the keys (100)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--pipeline", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--perturb", action="store_true",
                        help="delete one key after the load (checks fail)")
    args = parser.parse_args()
    if min(args.keys, args.size, args.requests, args.clients, args.pipeline) < 1 \
            or not 1 <= args.hot <= 100:
        parser.error("--keys, --size, --requests, --clients, --pipeline must be at least 1 "
                     "and --hot within 1-100")
    redis, client = shutil.which("redis-server"), shutil.which("redis-benchmark")
    if not redis or not client:
        print("redis_bench: redis-server and redis-benchmark are needed "
              "(apt-get install redis-server redis-tools)", file=sys.stderr)
        return 2
    # SIGTERM (compare's timeout, Ctrl-C's relatives) still stops the server
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="redis-bench-") as tmp:
        os.chmod(tmp, 0o700)
        sock = Path(tmp) / "redis.sock"
        try:
            server = start_server(redis, sock, Path(tmp))
        except OSError as err:
            print(f"redis_bench: {err}", file=sys.stderr)
            return 2
        try:
            conn = Connection(sock)
            load(conn, args.keys, args.size)
            if args.perturb:
                conn.call(b"DEL", b"key:%012d" % (args.keys // 2))
            check(conn, args.keys, args.size, "after the load", rng)
            used = int(next(line.split(b":")[1] for line in conn.call(b"INFO", b"memory")
                            .splitlines() if line.startswith(b"used_memory:")))
            row, seconds = read_phase(client, sock, args)
            check(conn, args.keys, args.size, "after the reads", rng)
            conn.close()
        except (CheckFailed, OSError, ValueError, StopIteration) as err:
            print(f"redis: verification failed: {err}", file=sys.stderr)
            return 3
        finally:
            stop_server(server, sock)
    print(f"redis: {args.keys} keys x {args.size} B values, {used / 2**20:.1f} MiB used "
          f"(INFO used_memory); {args.requests} GETs on {args.hot} % of the keys, "
          f"{args.clients} clients x pipeline {args.pipeline}")
    print(f"latency (redis-benchmark, ms): avg={row['avg_latency_ms']} "
          f"p50={row['p50_latency_ms']} p95={row['p95_latency_ms']} "
          f"p99={row['p99_latency_ms']} max={row['max_latency_ms']}")
    print("verification: passed")
    print(f"FOM redis={float(row['rps']):.1f} req/s time={seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
