"""Headless Chromium for the tests of the offline HTML pages (the report, sweep.html): where it
is, the flags that keep it off the network and out of the user's profile, and the page's DOM
after its scripts ran."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_flags(profile: Path) -> list[str]:
    """Headless, sandbox and GPU off, no network of its own, a fresh profile directory."""
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}"]


def dump_dom(page: Path, profile: Path) -> subprocess.CompletedProcess:
    """Load page, let its scripts run for 15 s of virtual time, and print its DOM."""
    return subprocess.run([CHROMIUM, *chromium_flags(profile), "--virtual-time-budget=15000",
                           "--dump-dom", page.as_uri()], capture_output=True, text=True,
                          timeout=180)
