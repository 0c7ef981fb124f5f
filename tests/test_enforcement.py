"""The enforced run's arithmetic: local memory, the mlock margin (default and fitted) and node
lists, on numbers alone (no root needed)."""

from __future__ import annotations

import pytest

from objtier.errors import UsageError
from objtier import enforcement as enforce


def test_local_and_margin():
    assert enforce.parse_local("50%", 200 << 20) == 100 << 20
    assert enforce.parse_local("64M", None) == 64 << 20
    assert enforce.default_margin(100 << 20) == 32 << 20       # 10% < 32 MiB
    assert enforce.default_margin(1 << 30) == (1 << 30) // 10
    assert enforce.mlock_limit(100 << 20, None) == (68 << 20, 32 << 20)
    assert enforce.mlock_limit(100 << 20, "8M") == (92 << 20, 8 << 20)
    for bad in ("0%", "150%", "abc", "0"):
        with pytest.raises(UsageError):
            enforce.parse_local(bad, 100 << 20)
    with pytest.raises(UsageError, match="leaves nothing to lock"):
        enforce.mlock_limit(16 << 20, None)
    # compare's fitted margin starts from at most half of a small local memory, never below
    # 8 MiB: 22 MiB (GUPS's 32 MiB table at 70 %) gets a plan, 8 MiB does not
    assert enforce.mlock_limit(22 << 20, None, fitted=True) == (11 << 20, 11 << 20)
    assert enforce.mlock_limit(100 << 20, None, fitted=True) == (68 << 20, 32 << 20)
    with pytest.raises(UsageError, match="leaves nothing to lock"):
        enforce.mlock_limit(8 << 20, None, fitted=True)
    assert enforce.check_nodes("0-1, 3", "--fast-nodes") == "0-1,3"
    with pytest.raises(UsageError):
        enforce.check_nodes("a", "--slow-nodes")


def test_fitted_margin_is_room_for_the_unlocked_objects_within_8_mib_and_the_default():
    mib = 1 << 20
    assert enforce.fitted_margin(100 * mib, 0) == 8 * mib              # floor
    assert enforce.fitted_margin(100 * mib, 20 * mib) == 24 * mib      # the unlocked objects
    assert enforce.fitted_margin(100 * mib, 8 * mib) == 12 * mib       # ... and 4 MiB of slack
    assert enforce.fitted_margin(100 * mib, 60 * mib) == 32 * mib      # capped at the default
    assert enforce.fitted_margin(1 << 30, 200 * mib) == (1 << 30) // 10
    assert enforce.fitted_margin(40 * mib, 30 * mib) == 20 * mib       # half of a small local


def test_fit_margin_shrinks_to_the_unlocked_objects_and_grows_when_the_placement_changes():
    from types import SimpleNamespace

    import numpy as np

    mib = 1 << 20
    sizes = np.array([100, 8, 9], dtype=np.int64) * mib
    calls = []

    def place(limit):
        """A made-up planner: object 0 split at what is left; below 95 MiB of budget object 1
        is locked and object 2 not, above it the other way round."""
        calls.append(limit)
        whole = [1] if limit < 95 * mib else [2]
        fast = np.zeros(3, dtype=np.int64)
        fast[whole] = sizes[whole]
        fast[0] = limit - fast.sum()
        return SimpleNamespace(size=sizes, fast_bytes=fast)

    local = 110 * mib
    limit, margin, placement = enforce.fit_margin(local, 32 * mib, place)
    # default margin: object 2 (9 MiB) unlocked -> 13 MiB; at 97 MiB object 1 (8 MiB) is
    # unlocked instead, which needs only 12 MiB: the margin does not shrink again
    assert calls == [78 * mib, 97 * mib] and (limit, margin) == (97 * mib, 13 * mib)

    calls.clear()
    sizes[1] = 12 * mib     # now the second placement's unlocked object needs more room
    limit, margin, placement = enforce.fit_margin(local, 32 * mib, place)
    assert calls == [78 * mib, 97 * mib, 94 * mib] and margin == 16 * mib
    assert int(placement.size[placement.fast_bytes == 0].sum()) + 4 * mib <= margin
