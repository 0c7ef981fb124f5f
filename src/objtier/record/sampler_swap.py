"""A temporary zram swap device for the pageout sampler on a machine without swap."""

from __future__ import annotations

import contextlib
import os

from objtier.record.sampler_choice import needs_temporary_swap


@contextlib.contextmanager
def sampler_swap(sampler: str, say):
    """A temporary zram swap device while the pageout sampler records on a machine without
    swap; removed on exit, error, Ctrl-C and SIGTERM (Restorer)."""
    if not needs_temporary_swap(sampler):
        yield
        return
    from objtier.restore import Restorer
    from objtier.tiers.swap import ZramSwap

    with Restorer() as restorer:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        zram = ZramSwap(min(total // 4, 8 << 30), restorer, priority=0)
        say(f"temporary swap device {zram.device} (zram, removed at exit)")
        yield
