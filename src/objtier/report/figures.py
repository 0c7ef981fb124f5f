"""The report's figures (seed Figs. 3-10), built with matplotlib's object API (no pyplot state).

Each builder returns (Figure, None) or (None, note): the note is the one line the page shows
when the trace lacks the data. Every axes gets a title and axis labels with units.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pyarrow as pa
from matplotlib.figure import Figure

from objtier.analysis import tiers, timeline
from objtier.analysis.objects import level_mask, FAST_LEVELS, column

MAX_POINTS = 200_000  # scatter plots are thinned to at most this many points (every k-th)


def _fig(rows: int = 1, height: float = 3.2) -> tuple[Figure, list]:
    fig = Figure(figsize=(8, height * rows), layout="constrained")
    return fig, [fig.add_subplot(rows, 1, i + 1) for i in range(rows)]


def to_png_base64(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def fig_levels(samples: pa.Table):
    table = tiers.level_shares(samples)
    if table is None:
        return None, "Fig. 3: the sampler reports no memory level (fault/trace sampler)."
    fig, (ax,) = _fig()
    ax.bar(table.column("level").to_pylist(), 100 * np.asarray(table.column("share")))
    ax.set_title("Fig. 3 - samples per memory level")
    ax.set_xlabel("memory level (data source)")
    ax.set_ylabel("share of samples (%)")
    return fig, None


def fig_touches(touch: pa.Table):
    if int(np.asarray(touch.column("pages")).sum()) == 0:
        return None, "Fig. 4: no samples outside the caches."
    fig, (ax,) = _fig()
    ax.bar(["1 touch", "2 touches", "3+ touches"], 100 * np.asarray(touch.column("share")))
    ax.set_title("Fig. 4 - pages by number of sampled touches")
    ax.set_xlabel("sampled touches per page (count)")
    ax.set_ylabel("share of touched pages (%)")
    return fig, None


def fig_reuse(stats: pa.Table, label: str):
    values = stats.column("seconds").to_pylist()
    if values[0] is None:
        return None, "Fig. 5: the hottest object has no page touched exactly twice."
    fig, (ax,) = _fig()
    ax.bar(stats.column("statistic").to_pylist(), values)
    ax.set_title(f"Fig. 5 - reuse interval, pages touched twice: {label[:60]}")
    ax.set_xlabel("statistic")
    ax.set_ylabel("interval between the two touches (s)")
    return fig, None


def fig_top_objects(objects: pa.Table, levels: bool, top: int = 10):
    """Fig. 6: top objects by samples in each tier (or overall when levels are unknown)."""
    groups = [("fast_samples", "fast tier"), ("slow_samples", "slow tier")] if levels \
        else [("samples", "all samples")]
    fig, axes = _fig(len(groups))
    for ax, (col, name) in zip(axes, groups):
        counts = column(objects, col, np.float64)
        total = counts.sum()
        order = np.argsort(-counts, kind="stable")[:top]
        order = order[counts[order] > 0]
        ax.bar([str(i) for i in order], 100 * counts[order] / total if total else counts[order])
        ax.set_title(f"Fig. 6 - top {top} objects, {name}")
        ax.set_xlabel("object (row of objects.csv)")
        ax.set_ylabel(f"share of {name} samples (%)")
    return fig, None


def fig_timeline(objects: pa.Table, start_ns: int, hot: list[int]):
    if not objects.num_rows:
        return None, "Fig. 7: the trace has no allocations."
    t, live = timeline.live_bytes(objects, start_ns)
    fig, (ax,) = _fig()
    ax.step(t, live / 2**20, where="post", color="tab:blue")
    alloc = column(objects, "alloc_ns", np.float64)
    for rank, obj in enumerate(hot[:3]):
        ax.axvline((alloc[obj] - start_ns) / 1e9, linestyle="--", color=f"C{rank + 1}",
                   label=f"object {obj} allocated")
    if hot:
        ax.legend(loc="upper left", fontsize=8)
    ax.set_title("Fig. 7 - live bytes of tracked objects over time")
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("live objects (MiB)")
    return fig, None


def fig_access_pattern(trace, mapped: np.ndarray, obj: int, page_shift: int, addr: int):
    sel = np.flatnonzero(mapped == obj)
    if not len(sel):
        return None, "Fig. 8: no object has samples."
    sel = sel[:: max(1, len(sel) // MAX_POINTS)]
    t = (column(trace.samples, "time_ns", np.float64)[sel] - trace.start_ns) / 1e9
    page = (column(trace.samples, "addr", np.uint64)[sel] - np.uint64(addr)) >> np.uint64(page_shift)
    fig, (ax, zoom) = _fig(2)
    ax.scatter(t, page, s=2, color="tab:blue")
    ax.set_title(f"Fig. 8a - access pattern of object {obj} (whole run)")
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("page in object (index)")
    mid = float(np.median(t))
    lo = max(float(t.min()), mid - 0.5)
    ax.axvspan(lo, lo + 1.0, color="tab:red", alpha=0.15)
    in_zoom = (t >= lo) & (t < lo + 1.0)
    zoom.scatter(t[in_zoom], page[in_zoom], s=4, color="tab:red")
    zoom.set_xlim(lo, lo + 1.0)
    zoom.set_title("Fig. 8b - one-second zoom")
    zoom.set_xlabel("time since start (s)")
    zoom.set_ylabel("page in object (index)")
    return fig, None


_COUNTER_GROUPS = [
    ("memory per node", lambda n: n.startswith("node") and "mem" in n),
    ("promotion / demotion", lambda n: "promote" in n or "demote" in n or "migrate" in n),
    ("swap", lambda n: "swp" in n or "swap" in n),
    ("CPU", lambda n: "cpu" in n),
]


def fig_counters(series: dict):
    groups = []
    for title, match in _COUNTER_GROUPS:
        names = [n for n in series if match(n)]
        if names:
            groups.append((title, names))
    if not groups:
        return None, "Fig. 9: the recording has no system counters (counters.otr missing)."
    fig, axes = _fig(len(groups), height=2.4)
    for ax, (title, names) in zip(axes, groups):
        units = set()
        for name in names:
            t, v, unit = series[name]
            if timeline.is_cumulative(name) and len(v) > 1:
                t, v = t[1:], np.diff(v)
                unit = f"{unit}/interval"
            if unit == "bytes":
                v, unit = v / 2**20, "MiB"
            units.add(unit or "value")
            ax.plot(t, v, label=name)
        ax.legend(loc="upper left", fontsize=7)
        ax.set_title(f"Fig. 9 - {title}")
        ax.set_xlabel("time since start (s)")
        ax.set_ylabel(f"{title} ({', '.join(sorted(units))})")
    return fig, None


def fig_promotions(trace, series: dict):
    """Fig. 10: promotions per interval vs fast-tier samples per interval, with correlation."""
    names = [n for n in series if "pgpromote_success" in n]
    if not names:
        return None, "Fig. 10: no promotion counter (vmstat.pgpromote_success) was recorded.", None
    level = column(trace.samples, "level", np.uint8)
    if not (level > 0).any():
        return None, ("Fig. 10: the sampler reports no memory level, so fast-tier samples "
                      "cannot be told apart (fault/trace sampler)."), None
    t, v, _ = series[names[0]]
    if len(t) < 3:
        return None, "Fig. 10: fewer than three counter readings.", None
    promoted = np.diff(v)
    st = (column(trace.samples, "time_ns", np.float64) - trace.start_ns) / 1e9
    fast = np.histogram(st[level_mask(level, FAST_LEVELS)], bins=t)[0]
    corr = None
    if promoted.std() > 0 and fast.std() > 0:
        corr = float(np.corrcoef(promoted, fast)[0, 1])
    fig, (top, bottom) = _fig(2, height=2.4)
    top.step(t[1:], fast, where="pre")
    top.set_title("Fig. 10a - fast-tier samples per counter interval")
    top.set_xlabel("time since start (s)")
    top.set_ylabel("samples (count)")
    bottom.step(t[1:], promoted, where="pre", color="tab:orange")
    text = "n/a" if corr is None else f"{corr:.2f}"
    bottom.set_title(f"Fig. 10b - pages promoted per interval (Pearson r = {text})")
    bottom.set_xlabel("time since start (s)")
    bottom.set_ylabel("promoted (pages)")
    return fig, None, corr
