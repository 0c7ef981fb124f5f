"""The FoM-vs-level figure of a sweep (the seed's Fig. 7): every run as a dot, the median per
level with its bootstrap interval, and the 90/75/50 % lines of the baseline; one panel per
--threads series. Levels are placed in run order (least to most throttled), evenly spaced."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

LINES = {"90": "#2ca02c", "75": "#ff7f0e", "50": "#d62728"}


def plot_sweep(doc: dict[str, Any], path: Path) -> None:
    """Write the figure as a PNG (0600) to path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from objtier.sweep.output import threshold_text, write_private

    series = doc["series"]
    fig, axes = plt.subplots(1, len(series), figsize=(5.5 * len(series), 4), squeeze=False)
    unit = (doc.get("fom") or {}).get("unit") or ""
    for ax, s in zip(axes[0], series):
        levels = s["levels"]
        xs = list(range(len(levels)))
        for x, level in zip(xs, levels):
            values = [v for v in level["fom"] if v is not None]
            ax.plot([x] * len(values), values, ".", color="#9e9e9e", alpha=0.7)
        medians = [lv["median"] if isinstance(lv["median"], (int, float)) else None
                   for lv in levels]
        ok = [(x, m, lv["ci"]) for x, m, lv in zip(xs, medians, levels) if m is not None]
        if ok:
            ax.errorbar([x for x, _, _ in ok], [m for _, m, _ in ok],
                        yerr=[[max(0.0, m - (c[0] if isinstance(c[0], (int, float)) else m))
                               for _, m, c in ok],
                              [max(0.0, (c[1] if isinstance(c[1], (int, float)) else m) - m)
                               for _, m, c in ok]],
                        fmt="o-", color="#4c72b0", capsize=3, label="median (95% CI)")
        if s["baseline"]:
            for percent, color in LINES.items():
                line = s["baseline"] * int(percent) / 100.0
                if not (doc.get("fom") or {}).get("higher_is_better", True):
                    line = s["baseline"] * 100.0 / int(percent)
                label = f"{percent}%: T{percent} = {threshold_text(s, percent)}"
                ax.axhline(line, color=color, linestyle="--", linewidth=1, label=label)
        ax.set_xticks(xs, [lv["label"] for lv in levels], rotation=45, ha="right")
        ax.set_xlabel(f"{doc['knob']} level ({levels[0]['kind'] if levels else ''})")
        ax.set_ylabel(f"FoM {unit}".strip())
        ax.set_ylim(bottom=0)
        title = f"{doc['knob']}" + (f", {s['threads']} threads" if s["threads"] else "")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    write_private(path, buffer.getvalue())
