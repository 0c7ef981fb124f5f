"""Simulation output: the rich table, CSV files and over-time plots."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from objtier.sim.run import Simulation

COLUMNS = ("policy", "fast_accesses", "slow_accesses", "other_accesses", "fast_share",
           "promotions", "demotions", "migrated_bytes", "hint_faults", "swap_ins", "swap_outs",
           "sampled_swap_ins", "sampled_swap_outs", "stall_s", "speedup")


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def print_table(sim: Simulation, console=None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    basis = sim.basis   # "exact" or "estimate": every absolute figure says which
    title = (f"fast tier {_human(sim.fast_bytes)} of {_human(sim.footprint_bytes)} peak live, "
             f"preset {sim.model.name}, {sim.page_bytes // 1024} KiB pages; counts and stall "
             f"are {'exact' if basis == 'exact' else 'estimates'}")
    table = Table(title=title)
    tag = f" ({'exact' if basis == 'exact' else 'est.'})"
    heads = ["policy", "fast acc" + tag, "slow acc" + tag, "fast %", "promoted", "demoted",
             "migrated", "hint faults", f"stall (s, {'exact' if basis == 'exact' else 'est.'})",
             "speedup"]
    if sim.swap:
        table.title += ", slow tier = swap"
        heads[4:4] = ["swap-in" + tag, "swap-out" + tag]
    for i, head in enumerate(heads):
        table.add_column(head, justify="left" if i == 0 else "right")
    for row in sim.rows():
        share = row["fast_share"]
        swap = [f"{row['swap_ins']:,}", f"{row['swap_outs']:,}"] if sim.swap else []
        table.add_row(row["policy"], f"{row['fast_accesses']:,}", f"{row['slow_accesses']:,}",
                      "-" if share != share else f"{100 * share:.1f}", *swap,
                      f"{row['promotions']:,}", f"{row['demotions']:,}",
                      _human(row["migrated_bytes"]), f"{row['hint_faults']:,}",
                      f"{row['stall_s']:.4g}",
                      "-" if row["speedup"] != row["speedup"] else f"{row['speedup']:.2f}x")
    console.print(table)
    if sim.scale is not None:
        console.print(f"scale: {sim.scale.description}")


def write_csv(sim: Simulation, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    summary = out / "simulate.csv"
    with open(summary, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS) + ["preset", "fast_bytes", "page_bytes",
                                                          "basis"])
        w.writeheader()
        for row in sim.rows():
            w.writerow({**row, "preset": sim.model.name, "fast_bytes": sim.fast_bytes,
                        "page_bytes": sim.page_bytes, "basis": sim.basis})
    counters = out / "simulate-counters.csv"
    with open(counters, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["policy", "counter", "value"])
        for r in sim.results:
            for name, value in r.counters.items():
                w.writerow([r.policy, name, value])
    timeline = out / "simulate-timeline.csv"
    with open(timeline, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["policy", "t_s", "fast_accesses", "slow_accesses", "promoted", "demoted",
                    "hint_faults", "fast_pages", "slow_pages", "swap_in", "swap_out"])
        for r in sim.results:
            b = r.bins
            t = np.arange(len(b)) * sim.bin_ns / 1e9
            for i in range(len(b)):
                w.writerow([r.policy, f"{t[i]:.3f}",
                            int(b["fast_loads"][i] + b["fast_stores"][i]),
                            int(b["slow_loads"][i] + b["slow_stores"][i]), int(b["promoted"][i]),
                            int(b["demoted"][i]), int(b["hint_faults"][i]),
                            int(b["fast_pages"][i]), int(b["slow_pages"][i]),
                            int(b["swap_in"][i]), int(b["swap_out"][i])])
    paths = [summary, counters, timeline]
    if sim.swap and sim.object_labels is not None:
        paths.append(write_object_swap_ins(sim, out / "simulate-objects.csv"))
    return paths


def write_object_swap_ins(sim: Simulation, path: Path) -> Path:
    """Swap-ins per object and policy: the objects that any policy swapped in, most first."""
    per = np.array([r.object_swap_ins for r in sim.results], dtype=np.int64)
    total = per.sum(axis=0)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["object", "allocated_at", "size_bytes",
                    *[f"swap_ins_{r.policy}" for r in sim.results]])
        for i in np.argsort(-total, kind="stable"):
            if total[i] == 0:
                break
            w.writerow([int(i), sim.object_labels[i], int(sim.object_sizes[i]),
                        *[int(v) for v in per[:, i]]])
    return path


def write_plots(sim: Simulation, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for r in sim.results:
        b = r.bins
        t = np.arange(len(b)) * sim.bin_ns / 1e9
        fast = (b["fast_loads"] + b["fast_stores"]).astype(float)
        total = fast + (b["slow_loads"] + b["slow_stores"])
        share = np.divide(100 * fast, total, out=np.full(len(b), np.nan), where=total > 0)
        ax.plot(t, share, label=r.policy, lw=1.2)
    ax.set_title(f"Share of accesses served by the fast tier ({sim.model.name}, "
                 f"{_human(sim.fast_bytes)} fast)")
    ax.set_xlabel("trace time (s)")
    ax.set_ylabel("fast-tier accesses (% of object accesses)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize="small", ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    paths.append(out / "simulate-fast-share.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 4.5))
    scale = sim.page_bytes / 2**20 / (sim.bin_ns / 1e9)
    for r in sim.results:
        b = r.bins
        up, down = ("swap_in", "swap_out") if sim.swap else ("promoted", "demoted")
        if not (b[up].any() or b[down].any()):
            continue
        t = np.arange(len(b)) * sim.bin_ns / 1e9
        line, = ax.plot(t, b[up] * scale, label=f"{r.policy} {up.replace('_', '-')}", lw=1.2)
        ax.plot(t, b[down] * scale, ls="--", color=line.get_color(),
                label=f"{r.policy} {down.replace('_', '-')}", lw=1.2)
    what = "exact" if sim.basis == "exact" else "estimated"
    ax.set_title(f"Swap traffic over time ({what})" if sim.swap
                 else f"Page migrations over time ({what})")
    ax.set_xlabel("trace time (s)")
    ax.set_ylabel("migration rate (MiB/s)")
    if ax.lines:
        ax.legend(fontsize="small", ncol=2)
    else:
        ax.text(0.5, 0.5, "no policy migrated pages", ha="center", transform=ax.transAxes)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    paths.append(out / "simulate-migrations.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths
