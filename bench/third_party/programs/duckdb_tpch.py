"""TPC-H on DuckDB, in memory: the 22 queries of DuckDB's tpch extension, repeated.

The DuckDB wheel on PyPI builds in only core_functions, icu, json and parquet; the tpch
extension is downloaded on first use, which this machine cannot do. The PyPI package
duckdb-extension-tpch ships the extension binary for one DuckDB version (1.5.5: setup.sh pins
both); DuckDB checks the binary's signature when it is loaded (unsigned extensions stay
refused). Without it this driver is a one-line error, exit status 2.

The data are TPC-H at scale factor SF (`CALL dbgen(sf=SF)`), held in DuckDB's in-memory
database (columnar, compressed; about 1.6 GiB per unit of SF, 160 MiB at 0.1). dbgen is
single-threaded and slow (about 15 s at SF 0.1 on the 2-core VM under load), so with
`--cache FILE` the tables are generated once into a DuckDB file (0600) and later runs copy
them from it into memory (a few seconds); the file's pages are page cache, which
`objtier compare` leaves out of the footprint. Queries run on 2 threads (`SET threads=2`) with
a memory limit high enough that DuckDB never spills (DuckDB otherwise sets its own limit from
the memory cgroup's: the cgroup is the limit measured here).

Checks: every repetition of a query must return the same rows (hash of the result), and at
the scale factors the extension has answers for (0.01, 0.1, 1) as many rows as the official
answer. Prints one line `FOM duckdb=<queries per second> q/s time=<seconds>` over the timed
queries (loading is not timed); exits 3 when a check fails. `--perturb` deletes some lineitem
rows after the first repetition, so that the checks must fail (for testing them).

    python duckdb_tpch.py [--sf 0.1] [--reps 3] [--queries 1-22] [--cache FILE] [--perturb]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

MEMORY_LIMIT = "16GB"   # far above any footprint here: DuckDB must not spill or refuse
ANSWERED_SF = (0.01, 0.1, 1.0)


def extension_path(duckdb) -> Path | None:
    """The tpch extension binary that duckdb-extension-tpch ships for this DuckDB version."""
    try:
        import duckdb_extension_tpch as package
    except ImportError:
        return None
    path = (Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}"
            / "tpch.duckdb_extension")
    return path if path.is_file() else None


def connect(duckdb, ext: Path, database: str = ":memory:"):
    con = duckdb.connect(database, config={"autoinstall_known_extensions": False,
                                           "autoload_known_extensions": False})
    con.execute(f"LOAD '{ext}'")
    con.execute("SET threads=2")
    con.execute("SET enable_progress_bar=false")
    con.execute(f"SET memory_limit='{MEMORY_LIMIT}'")
    return con


def tables(con, database: str) -> list[str]:
    return [name for (name,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ? ORDER BY 1",
        [database]).fetchall()]


def load(con, sf: float, cache: Path | None, duckdb, ext: Path) -> str:
    """Fill the in-memory database; returns where the data came from."""
    if cache is None:
        con.execute(f"CALL dbgen(sf={sf})")
        return f"dbgen sf={sf:g}"
    if not cache.exists():
        partial = cache.with_name(cache.name + ".partial")
        partial.unlink(missing_ok=True)
        old = os.umask(0o077)    # DuckDB creates the file itself: 0600
        try:
            writer = connect(duckdb, ext, str(partial))
            writer.execute(f"CALL dbgen(sf={sf})")
            writer.close()
        finally:
            os.umask(old)
        os.replace(partial, cache)
    con.execute(f"ATTACH '{cache}' AS src (READ_ONLY)")
    got = tables(con, "src")
    if "lineitem" not in got:
        raise ValueError(f"{cache} holds no TPC-H tables")
    for name in got:
        con.execute(f"CREATE TABLE memory.main.{name} AS SELECT * FROM src.main.{name}")
    con.execute("DETACH src")
    return f"copied from {cache}"


def expected_rows(con, sf: float, queries: list[int]) -> dict[int, int]:
    """Row counts of the official answers at this scale factor (none for other factors)."""
    match = [s for s in ANSWERED_SF if abs(s - sf) < 1e-9]
    if not match:
        return {}
    rows = con.execute("SELECT query_nr, answer FROM tpch_answers() WHERE scale_factor = ?",
                       [match[0]]).fetchall()
    # one header line, then one line per row (an empty line is a row of NULL)
    return {q: answer.count("\n") - answer.endswith("\n")
            for q, answer in rows if q in queries}


def result_hash(rows: list[tuple]) -> str:
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def parse_queries(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        out += range(int(first), int(last or first) + 1)
    if not out or any(not 1 <= q <= 22 for q in out):
        raise ValueError(f"queries must be within 1-22: {text!r}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor (0.1)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the query set (3)")
    parser.add_argument("--queries", default="1-22", help="e.g. 1,3,5-10 (1-22)")
    parser.add_argument("--cache", type=Path, help="DuckDB file holding the generated tables")
    parser.add_argument("--perturb", action="store_true",
                        help="delete lineitem rows after the first repetition (checks fail)")
    args = parser.parse_args()
    try:
        queries = parse_queries(args.queries)
    except ValueError as err:
        parser.error(str(err))
    if not 0 < args.sf <= 10 or args.reps < 1:
        parser.error("--sf must be in (0, 10] and --reps at least 1")
    try:
        import duckdb
    except ImportError:
        print("duckdb_tpch: duckdb is not installed (bench/third_party/setup.sh)", file=sys.stderr)
        return 2
    ext = extension_path(duckdb)
    if ext is None:
        print(f"duckdb_tpch: no tpch extension for DuckDB {duckdb.__version__} (PyPI "
              "duckdb-extension-tpch of the same version; bench/third_party/setup.sh)",
              file=sys.stderr)
        return 2
    try:
        con = connect(duckdb, ext)
        source = load(con, args.sf, args.cache, duckdb, ext)
        expected = expected_rows(con, args.sf, queries)
    except (duckdb.Error, OSError, ValueError) as err:
        print(f"duckdb_tpch: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    lineitem = con.execute("SELECT count(*) FROM lineitem").fetchone()[0]
    mib = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()[0] / 2**20

    first: dict[int, str] = {}
    failures: list[str] = []
    start = time.perf_counter()
    for rep in range(args.reps):
        for q in queries:
            rows = con.execute(f"PRAGMA tpch({q})").fetchall()
            digest = result_hash(rows)
            if rep == 0:
                first[q] = digest
                if q in expected and len(rows) != expected[q]:
                    failures.append(f"Q{q}: {len(rows)} rows, the answer has {expected[q]}")
            elif digest != first[q]:
                failures.append(f"Q{q}: repetition {rep + 1} returned other rows")
        if rep == 0 and args.perturb:
            con.execute("DELETE FROM lineitem WHERE l_orderkey % 7 = 0")
    seconds = time.perf_counter() - start
    con.close()
    print(f"duckdb {duckdb.__version__}: TPC-H sf={args.sf:g} ({source}), {lineitem} lineitem "
          f"rows, {mib:.0f} MiB in memory; {len(queries)} queries x {args.reps}")
    if failures:
        print(f"duckdb: verification failed: {'; '.join(failures[:3])}", file=sys.stderr)
        return 3
    print("verification: passed" + ("" if expected else " (no official answers at this sf)"))
    print(f"FOM duckdb={len(queries) * args.reps / seconds:.3f} q/s time={seconds:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
