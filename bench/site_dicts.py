"""Two small-block sites of CPython, for bench/site_accuracy.py (run under the system's python3,
not objtier's venv): 40000 dict rows, each with a list of 100 items (the list's item array is
one 800 B block from the allocator), read ROUNDS times, and 40000 strings of 1 KiB (one block
each), written once and never read again, allocated interleaved with the rows so that with the
program's allocator every heap page holds both. Blocks above 512 B bypass CPython's small-object
allocator, so each is a malloc block; the two are made by different calls (a list repeat,
str.rjust), so they are two sites.

    python3 bench/site_dicts.py [ROWS] [ROUNDS]     # defaults 40000 1000

Prints a checksum that depends on every read.
"""

import sys


def main() -> int:
    rows_n = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    rows, strings = [], []
    for i in range(rows_n):
        rows.append({"id": i, "items": [i & 0xff] * 100})   # 100 pointers: an 800 B array
        strings.append(f"{i:08d}".rjust(1024, "."))           # 1024 ASCII characters
    total = 0
    for r in range(rounds):
        j = r % 100
        for row in rows:
            total += row["items"][j]
    print(f"rows={rows_n} rounds={rounds} strings={len(strings)} sum={total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
