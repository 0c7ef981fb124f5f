"""What import-perf and import-damo both say after storing samples."""

from __future__ import annotations

from pathlib import Path


def say_mapped(recording: Path, say) -> None:
    """How many stored samples fall on an object (by pid, address and time)."""
    from objtier.analysis.mapping import sample_objects
    from objtier.trace import open_trace

    trace = open_trace(recording)
    mapped = sample_objects(trace)
    on = int((mapped >= 0).sum())
    share = f" ({100 * on / len(mapped):.1f}%)" if len(mapped) else ""
    say(f"{on} of {len(mapped)} samples{share} fall on one of the recording's "
        f"{trace.allocations.num_rows} objects")
