"""camat.json, CSV and Parquet tables, and the terminal tables of a C-AMAT report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from objtier.camat.terms import TERM_KEYS
from objtier.errors import UsageError


def private_dir(path: Path) -> Path:
    """Create (or reuse) an output directory readable by its owner only (0700)."""
    if path.is_symlink():
        raise UsageError(f"{path} is a symbolic link; refusing to write into it")
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path} exists and is not a directory")
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def _private_file(path: Path) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    os.fchmod(fd, 0o600)
    return fd


def _write_bytes(path: Path, data: bytes) -> None:
    fd = _private_file(path)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _rows(doc: dict, key: str) -> list[dict]:
    """Flat rows: one per level, or one per (object|region, level)."""
    if key == "levels":
        counts = {c["level"]: c for c in doc.get("counts", [])}
        return [{**lv, **{k: v for k, v in counts.get(lv["level"], {}).items() if k != "level"}}
                for lv in doc["levels"]]
    name = "object" if key == "objects" else "region"
    rows = []
    for e in doc[key]:
        for lv in e["levels"]:
            rows.append({name: e[name], **lv})
    return rows


def _table(rows: list[dict]) -> pa.Table:
    if not rows:
        return pa.table({})
    names = list(rows[0])
    return pa.table({n: [r.get(n) for r in rows] for n in names})


def write_outputs(doc: dict, out: Path) -> list[Path]:
    """camat.json, camat.html and camat-{levels,objects,regions}.{csv,parquet} in out (0700,
    files 0600)."""
    private_dir(out)
    from objtier.camat.html import page_html

    paths = [out / "camat.json", out / "camat.html"]
    _write_bytes(paths[0], (json.dumps(doc, indent=1) + "\n").encode())
    _write_bytes(paths[1], page_html(doc).encode())
    for key in ("levels", "objects", "regions"):
        if key not in doc:
            continue
        table = _table(_rows(doc, key))
        if not table.num_columns:
            continue
        csv_path, pq_path = out / f"camat-{key}.csv", out / f"camat-{key}.parquet"
        for path in (csv_path, pq_path):
            os.close(_private_file(path))
        pacsv.write_csv(table, str(csv_path))
        pq.write_table(table, str(pq_path))
        paths += [csv_path, pq_path]
    return paths


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _ci(counts: dict) -> str:
    """A level's C-AMAT confidence half-width from the units (sampled timing)."""
    ci, n = counts.get("camat_ci95"), counts.get("measured_accesses")
    if ci is None:
        return "no units" if not n else "-"
    return f"±{ci:.3g}"


def print_tables(doc: dict, console, regions: bool = False, top: int = 10) -> None:
    from rich.table import Table

    src = doc["source"]
    params = doc.get("parameters", {})
    title = f"C-AMAT per level ({src}"
    if params.get("local_percent") is not None:
        title += f", Xmem({params['local_percent']:g} %), {params.get('fill')} fill"
    timing = doc.get("timing", {})
    if timing.get("mode") == "sampled":
        over = " over the windows" if timing.get("counts_of") == "the modelled windows" else ""
        title += (f", sampled: a unit of {timing['unit']:,} accesses per {timing['period']:,}, "
                  f"{100 * timing['timed_fraction']:.2g} % timed; MR exact{over}, other terms "
                  "estimated")
    title += ")"
    if doc.get("coverage"):
        from objtier.camat.coverage import describe, warning

        console.print(describe(doc["coverage"]))
        cut = warning(doc["coverage"])
        if cut:
            console.print(f"warning: {cut}")
    t = Table(title=title)
    t.add_column("level")
    for k in TERM_KEYS:
        t.add_column(k, justify="right")
    t.add_column("APC", justify="right")
    sampled = timing.get("mode") == "sampled"
    if sampled:
        t.add_column("C-AMAT 95 % CI", justify="right")
    counts = {c["level"]: c for c in doc.get("counts", [])}
    for lv in doc["levels"]:
        c = counts.get(lv["level"], {})
        t.add_row(lv["level"], *[_fmt(lv[k]) for k in TERM_KEYS], _fmt(c.get("apc")),
                  *([_ci(c)] if sampled else []))
    console.print(t)
    objs = doc.get("objects", [])
    if objs:
        t = Table(title=f"objects (top {min(top, len(objs))} by share of L1 active cycles)")
        for col in ("object", "accesses", "L1 C-AMAT", "L1 C_M", "mem pMR", "mem C_M",
                    "mem C-AMAT"):
            t.add_column(col, justify="left" if col == "object" else "right")
        for e in objs[:top]:
            l1 = next((lv for lv in e["levels"] if lv["level"] == "L1"), {})
            t.add_row(e["object"][:60], _fmt(e.get("accesses")), _fmt(l1.get("camat")),
                      _fmt(l1.get("C_M")), _fmt(e["pMR"]), _fmt(e["C_M"]), _fmt(e["camat"]))
        console.print(t)
    regs = doc.get("regions", [])
    if regions and regs:
        t = Table(title="code regions (by share of L1 active cycles)")
        for col in ("region", "accesses", "L1 C-AMAT", "L1 C_M", "active share",
                    "coherence misses", "false sharing", "invalidations"):
            t.add_column(col, justify="left" if col == "region" else "right")
        total = sum(r.get("l1_active_share", 0) for r in regs) or 1.0
        for r in regs[:top]:
            l1 = next((lv for lv in r["levels"] if lv["level"] == "L1"), {})
            t.add_row(r["region"][:50], _fmt(r.get("accesses")), _fmt(l1.get("camat")),
                      _fmt(l1.get("C_M")), f"{100 * r.get('l1_active_share', 0) / total:.1f} %",
                      _fmt(r.get("coherence_misses")), _fmt(r.get("false_sharing_misses")),
                      _fmt(r.get("invalidations")))
        console.print(t)
    for line in doc.get("findings", []):
        console.print(line)
