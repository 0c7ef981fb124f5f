"""The comparison chart, after the IISWC seed's Fig. 11: per workload, the execution time of each
configuration normalized to the kernel baseline's median (baseline = 1.0; lower is better).

Bars are medians of the repeats; whiskers span the fastest and slowest successful run. A third
bar, "all local", is the unlimited run (no cgroup limit): the floor a placement can approach.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

BAR_COLORS = {"all local": "#9e9e9e", "baseline": "#4c72b0", "objtier": "#dd8452"}


def normalized_times(summary: dict[str, Any], rows: list[dict[str, Any]] | None
                     ) -> dict[str, tuple[float, float, float] | None]:
    """config -> (median, min, max) of wall time / baseline median wall time, or None."""
    base = summary["medians"]["baseline"]["wall_s"]
    out: dict[str, tuple[float, float, float] | None] = {}
    unlimited = summary.get("unlimited", {}).get("wall_s")
    out["all local"] = (unlimited / base,) * 3 if base and unlimited else None
    for config in ("baseline", "objtier"):
        median = summary["medians"][config]["wall_s"]
        if not base or median is None:
            out[config] = None
            continue
        walls = [float(r["wall_s"]) for r in rows or [] if r["config"] == config
                 and int(r["returncode"]) == 0 and str(r["timed_out"]) in ("False", "0", "")]
        lo, hi = (min(walls), max(walls)) if walls else (median, median)
        out[config] = (median / base, lo / base, hi / base)
    return out


def plot_comparison(groups: list[tuple[str, dict[str, Any], list[dict[str, Any]] | None]],
                    path: Path, title: str) -> None:
    """groups: (workload label, summary, rows as dicts or None); writes a PNG to path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = list(BAR_COLORS)
    width = 0.26
    tallest = 1.0
    drawn = False
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(groups) + 2.5), 4.2), dpi=120)
    for i, config in enumerate(configs):
        xs, heights, low, high = [], [], [], []
        for g, (_, summary, rows) in enumerate(groups):
            value = normalized_times(summary, rows).get(config)
            if value is None:
                continue
            xs.append(g + (i - 1) * width)
            heights.append(value[0])
            low.append(value[0] - value[1])
            high.append(value[2] - value[0])
        if not xs:
            continue
        drawn = True
        ax.bar(xs, heights, width, label=config, color=BAR_COLORS[config],
               yerr=[low, high] if config != "all local" else None, capsize=3)
        tops = [h + (up if config != "all local" else 0.0) for h, up in zip(heights, high)]
        for x, h, top in zip(xs, heights, tops):
            ax.annotate(f"{h:.2f}", (x, top), ha="center", va="bottom", fontsize=7,
                        xytext=(0, 2), textcoords="offset points")
        tallest = max([tallest, *tops])
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([label for label, _, _ in groups], rotation=20 if len(groups) > 4
                       else 0, ha="right" if len(groups) > 4 else "center")
    ax.set_ylabel("execution time / kernel baseline median\n(wall clock; lower is better)")
    ax.set_xlabel("workload")
    ax.set_title(title)
    if drawn:
        ax.legend(loc="upper right", fontsize=8)
    else:  # every baseline run failed: there is no median to normalize to
        ax.text(0.5, 0.5, "no successful kernel-baseline run:\nnothing to normalize to",
                transform=ax.transAxes, ha="center", va="center")
    ax.set_ylim(0, tallest * 1.25)  # room for the labels and the legend
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
