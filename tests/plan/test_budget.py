"""--fast budgets: sizes, percentages, and the footprint a percentage refers to."""

from __future__ import annotations

import numpy as np
import pytest

from objtier.errors import UsageError
from objtier.plan import footprint, parse_budget, peak_live_bytes
from objtier.units import parse_size


@pytest.mark.parametrize("text, expected", [
    ("4096", 4096), ("512M", 512 << 20), ("8G", 8 << 30), ("8g", 8 << 30),
    ("1.5GiB", 3 << 29), ("64KB", 64 << 10), ("2T", 2 << 40), ("100B", 100),
    ("8Gi", 8 << 30), (" 16 MiB ", 16 << 20), ("1P", 1 << 50), (".5K", 512), ("2.k", 2048),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected
    assert parse_budget(text, 0).bytes == expected


@pytest.mark.parametrize("text", ["", "iB", "1iB", "1i", "8X", "-1G", "1.2.3G", "G", "9000P"])
def test_bad_sizes_are_one_line_errors_naming_the_option(text):
    with pytest.raises(UsageError) as info:
        parse_size(text, "--mlock-margin")
    assert str(info.value).startswith(f"invalid --mlock-margin '{text}'")
    assert "\n" not in str(info.value)


def test_percentages_are_of_the_footprint():
    b = parse_budget("70%", 1000)
    assert (b.bytes, b.percent, b.given, b.footprint_bytes) == (700, 70.0, "70%", 1000)
    assert parse_budget("100%", 4096).bytes == 4096
    assert parse_budget("12.5%", 800).bytes == 100


@pytest.mark.parametrize("text", ["", "abc", "8X", "-1G", "0", "0%", "150%", "70 %%", "1.2.3G",
                                  "iB", "5%G", "nan", "G"])
def test_bad_budgets_are_one_line_usage_errors(text):
    with pytest.raises(UsageError) as info:
        parse_budget(text, 1 << 30)
    assert "\n" not in str(info.value)
    assert repr(text) in str(info.value)


def test_percentage_of_an_empty_footprint_is_refused():
    with pytest.raises(UsageError, match="footprint is 0 bytes"):
        parse_budget("50%", 0)


def test_peak_live_bytes_and_footprint():
    size = np.array([100, 200, 50])
    alloc = np.array([0, 10, 20])
    free = np.array([20, -1, 30])   # object 0 freed when object 2 is allocated
    assert peak_live_bytes(size, alloc, free) == 300  # frees first at equal times
    assert footprint(size, alloc, free) == 300
    assert footprint(size) == 350
    assert footprint(size, peak_bytes=123) == 123
    assert peak_live_bytes(np.array([], dtype=np.int64), np.array([]), np.array([])) == 0
