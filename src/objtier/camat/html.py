"""The C-AMAT section of an HTML page (templates/camat.html.j2), from a camat.json document."""

from __future__ import annotations

import html
from pathlib import Path

import jinja2

from objtier.camat.terms import TERM_KEYS

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
BAR_PX = 180  # height of the tallest bar


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _l1(entry: dict) -> dict:
    return next((lv for lv in entry.get("levels", []) if lv["level"] == "L1"), {})


def section_html(doc: dict, top: int = 20) -> str:
    """The section as an HTML fragment (autoescaped)."""
    bars = []
    for lv in doc["levels"]:
        total = lv["camat"] or 0.0
        hit = (lv["H"] / lv["C_H"]) if lv["H"] is not None and lv["C_H"] else total
        bars.append({"level": lv["level"], "total": total, "hit": hit,
                     "miss": max(total - hit, 0.0)})
    scale = BAR_PX / max((b["total"] for b in bars), default=1.0) if bars else 1.0
    for b in bars:
        b["hit_px"] = round(b["hit"] * scale, 1)
        b["miss_px"] = round(b["miss"] * scale, 1)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    page = env.get_template("camat.html.j2").render(doc=doc, bars=bars, keys=TERM_KEYS,
                                                    fmt=_fmt, l1=_l1, top=top)
    note = _coverage_note(doc) + _sampled_note(doc)
    return page.replace("</h2>", "</h2>" + note, 1) if note else page


def _coverage_note(doc: dict) -> str:
    """Under the heading: what of the run the figures describe, and a warning when the stream
    left part of it out."""
    from objtier.camat.coverage import describe, warning

    cov = doc.get("coverage")
    if not cov:
        return ""
    text = describe(cov) + "."
    cut = warning(cov)
    if cut:
        text += f" Warning: {cut}."
    return f"<p class=\"note\">{html.escape(text)}</p>"


def _sampled_note(doc: dict) -> str:
    """Under the heading, for sampled timing: what is exact, what estimated, how sure."""
    t = doc.get("timing", {})
    if t.get("mode") != "sampled":
        return ""
    ci = ", ".join(f"{c['level']} ±{c['camat_ci95']:.3g}" for c in t.get("confidence", [])
                   if c.get("camat_ci95") is not None)
    over = t.get("counts_of", "the stream")
    text = (f"Sampled timing: a unit of {t['unit']:,} measured accesses (warm-up {t['warm']:,}) "
            f"per {t['period']:,}, {100 * t['timed_fraction']:.2g} % of the modelled accesses "
            f"timed. Accesses, misses and MR are exact over {over}; every other term is an "
            "estimate"
            + (f" (C-AMAT 95 % CI from the units: {ci} cycles)." if ci else "."))
    return f"<p class=\"note\">{html.escape(text)}</p>"


def page_html(doc: dict) -> str:
    """A self-contained page holding only the section (written as camat.html by -o DIR)."""
    title = f"objtier camat: {doc.get('recording', '')}"
    style = ("body{font-family:sans-serif;margin:1.5em auto;max-width:70em;color:#222}"
             "table{border-collapse:collapse;font-size:.85em;margin:.5em 0}"
             "th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}"
             "td:first-child{text-align:left}th{background:#f0f0f0}"
             ".note{color:#8a5a00;background:#fff6e0;padding:4px 8px}")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
            f"{jinja2.utils.markupsafe.escape(title)}</title><style>{style}</style></head><body>"
            f"{section_html(doc)}</body></html>\n")


def recording_section(trace) -> str | None:
    """The section for `objtier report`: the timing model (default preset) over the trace's
    ordered access stream, or None when it has none (or the model refuses it)."""
    from objtier.camat.analyze import findings, report, run_model, window_sampling
    from objtier.camat.model import DEFAULT_PRESET, hierarchy
    from objtier.camat.stream import load_stream
    from objtier.errors import ObjtierError

    try:
        if not trace.accesses.num_rows:
            return None
        stream = load_stream(trace)
        hier, sample = hierarchy(DEFAULT_PRESET), None
        if stream.coverage["mode"] == "windows":
            sample, hier = window_sampling(stream, hier)
        counts, params = run_model(stream, hier, sample=sample)
        doc = report(stream, counts, params)
        doc["findings"] = findings(doc)
        return section_html(doc)
    except ObjtierError:
        return None
