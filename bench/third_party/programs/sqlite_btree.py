"""Point lookups and range scans on an in-memory SQLite database (Python's sqlite3 module on
the system's libsqlite3) with a B-tree index.

One table of N rows, items(id INTEGER PRIMARY KEY, key INTEGER, name TEXT, payload BLOB),
inserted in id order with the keys a seeded permutation of 0..N-1, then an index on key.
A ":memory:" database lives wholly in SQLite's page cache: one malloc'd block per 4 KiB page
(page and header, about 4.4 KiB), none of which is ever written out, so the table's and the
index's B-trees are tens of thousands of small blocks and no large buffer (about 240 B per
row here: the row, its payload and its index entry).

The timed part: L point lookups by key through the index (each reads the index's B-tree from
root to leaf and then the table's), then S range scans of W consecutive keys (the index's
leaves in order, each row fetched from the table: random pages of it). Every answer is
checked against what the generator put there.

Prints one line `FOM sqlite=<queries per second> q/s time=<seconds>` over the lookups and
scans (loading is not timed); exits 3 when a check fails (--perturb deletes one looked-up row
after loading, so the check must fail).

    python sqlite_btree.py [--rows N] [--payload B] [--lookups L] [--scans S] [--width W]
        [--seed S] [--perturb]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import time

BATCH = 10_000      # rows generated and inserted at a time


def positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def payload(key: int, size: int) -> bytes:
    """The row's payload: SIZE bytes, a letter that depends on its key (the scans sum it)."""
    return bytes([65 + key % 26]) * size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=positive, default=300_000)
    parser.add_argument("--payload", type=positive, default=160, help="bytes per row")
    parser.add_argument("--lookups", type=positive, default=120_000)
    parser.add_argument("--scans", type=positive, default=300)
    parser.add_argument("--width", type=positive, default=1000, help="keys per range scan")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--perturb", action="store_true",
                        help="delete one looked-up row after loading (the check fails)")
    args = parser.parse_args()
    if args.width > args.rows:
        parser.error(f"--width {args.width} is more than --rows {args.rows}")

    rng = random.Random(args.seed)
    keys = list(range(args.rows))
    rng.shuffle(keys)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, key INTEGER NOT NULL, "
               "name TEXT NOT NULL, payload BLOB NOT NULL)")
    for first in range(0, args.rows, BATCH):
        db.executemany("INSERT INTO items VALUES (?, ?, ?, ?)",
                       ((i, keys[i], f"item-{keys[i]}", payload(keys[i], args.payload))
                        for i in range(first, min(first + BATCH, args.rows))))
    db.execute("CREATE INDEX items_key ON items (key)")
    db.commit()
    del keys
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    probes = [rng.randrange(args.rows) for _ in range(args.lookups)]
    lows = [rng.randrange(args.rows - args.width + 1) for _ in range(args.scans)]
    if args.perturb:
        db.execute("DELETE FROM items WHERE key = ?", (probes[-1],))

    start = time.perf_counter()
    lookup = "SELECT name, length(payload) FROM items WHERE key = ?"
    for key in probes:
        row = db.execute(lookup, (key,)).fetchone()
        if row != (f"item-{key}", args.payload):
            print(f"sqlite: verification failed: key {key} returned {row}", file=sys.stderr)
            return 3
    scan = ("SELECT count(*), sum(unicode(payload)) FROM items "
            "WHERE key BETWEEN ? AND ?")
    for low in lows:
        high = low + args.width - 1
        count, total = db.execute(scan, (low, high)).fetchone()
        want = sum(65 + key % 26 for key in range(low, high + 1))
        if (count, total) != (args.width, want):
            print(f"sqlite: verification failed: keys {low}..{high} gave {count} rows "
                  f"summing {total}, not {args.width} summing {want}", file=sys.stderr)
            return 3
    seconds = time.perf_counter() - start
    db.close()
    queries = args.lookups + args.scans
    print(f"sqlite {sqlite3.sqlite_version}: {args.rows} rows, {pages} pages of {page_size} B "
          f"({pages * page_size / 2**20:.1f} MiB); {args.lookups} lookups, {args.scans} scans "
          f"of {args.width} keys")
    print("verification: passed")
    print(f"FOM sqlite={queries / seconds:.3f} q/s time={seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
