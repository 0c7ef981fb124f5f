"""Fetch a Debian kernel image for the guest without installing anything on the host.

A private apt configuration under <cache>/apt points at one Debian suite (default
bookworm-backports, whose 6.12 kernel places a CPU-less node into a lower memory tier from HMAT
data). `apt-get update` fills only the private lists; `apt-get download` fetches the .deb; `dpkg -x`
extracts it into <cache>/kernel/<kver>/. The host's apt sources, lists and dpkg database are never
written.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from objtier.errors import EnvironmentProblem
from objtier.testbed.paths import TestbedPaths

DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SUITE = "bookworm-backports"
META_PACKAGE = "linux-image-amd64"


@dataclass(frozen=True)
class KernelImage:
    version: str      # uname -r of the guest kernel, e.g. "6.12.95+deb12-amd64"
    package: str      # the Debian package it came from (name=version)
    vmlinuz: str      # absolute path of the bzImage
    modules: str      # absolute path of lib/modules/<version>

    @classmethod
    def load(cls, paths: TestbedPaths) -> "KernelImage | None":
        try:
            data = json.loads(paths.kernel_json.read_text())
            image = cls(**data)
        except (OSError, ValueError, TypeError):
            return None
        if not (Path(image.vmlinuz).is_file() and Path(image.modules).is_dir()):
            return None
        return image


def _apt_options(paths: TestbedPaths) -> list[str]:
    apt = paths.apt
    return [
        "-o", f"Dir::Etc::SourceList={apt / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/nonexistent",
        "-o", f"Dir::State::Lists={apt / 'lists'}",
        "-o", f"Dir::Cache={apt / 'cache'}",
        "-o", "Dir::State::status=/var/lib/dpkg/status",
        "-o", "APT::Sandbox::User=root",
        "-o", "Debug::NoLocking=1",
        "-o", "Acquire::Languages=none",
    ]


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    except FileNotFoundError:
        raise EnvironmentProblem(f"{what}: `{cmd[0]}` not found (Debian's apt and dpkg are needed)")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise EnvironmentProblem(f"{what} failed: {last}")
    return done.stdout


def _resolve_image_package(paths: TestbedPaths, meta: str) -> tuple[str, str]:
    """The versioned linux-image package the meta package depends on, and its version."""
    opts = _apt_options(paths)
    depends = _run(["apt-cache", *opts, "depends", meta], f"apt-cache depends {meta}")
    match = re.search(r"Depends:\s*(linux-image-\S+)", depends)
    package = match.group(1) if match else meta
    shown = _run(["apt-cache", *opts, "show", package], f"apt-cache show {package}")
    version = re.search(r"^Version:\s*(\S+)", shown, re.M)
    if not version:
        raise EnvironmentProblem(f"apt-cache show {package}: no Version field")
    return package, version.group(1)


def fetch_kernel(paths: TestbedPaths, suite: str = DEFAULT_SUITE, mirror: str = DEFAULT_MIRROR,
                 meta: str = META_PACKAGE, log=print) -> KernelImage:
    """Download and extract the newest kernel image of `suite`; returns the extracted image.

    Idempotent: a package already downloaded and extracted is reused.
    """
    for tool in ("apt-get", "apt-cache", "dpkg"):
        if not shutil.which(tool):
            raise EnvironmentProblem(f"`{tool}` not found: the test machine needs Debian's apt/dpkg")
    apt = paths.apt
    for sub in ("lists/partial", "cache/archives/partial"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(f"deb {mirror} {suite} main\n")
    log(f"testbed: apt-get update ({suite}, private lists in {apt})")
    _run(["apt-get", *_apt_options(paths), "-q", "update"], "apt-get update")
    package, version = _resolve_image_package(paths, meta)
    kver = package.removeprefix("linux-image-")
    target = paths.kernels / kver
    vmlinuz = target / "boot" / f"vmlinuz-{kver}"
    modules = target / "lib" / "modules" / kver
    if not (vmlinuz.is_file() and modules.is_dir()):
        paths.debs.mkdir(parents=True, exist_ok=True)
        debs = sorted(paths.debs.glob(f"{package}_*.deb"))
        if not debs:
            log(f"testbed: apt-get download {package}={version}")
            _run(["apt-get", *_apt_options(paths), "-q", "download", f"{package}={version}"],
                 "apt-get download", cwd=paths.debs)
            debs = sorted(paths.debs.glob(f"{package}_*.deb"))
        if not debs:
            raise EnvironmentProblem(f"apt-get download {package}: no .deb appeared in {paths.debs}")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"testbed: dpkg -x {debs[-1].name}")
        _run(["dpkg", "-x", str(debs[-1]), str(tmp)], "dpkg -x")
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    if not vmlinuz.is_file():
        raise EnvironmentProblem(f"{package}: no boot/vmlinuz-{kver} inside the package")
    image = KernelImage(version=kver, package=f"{package}={version}", vmlinuz=str(vmlinuz),
                        modules=str(modules))
    paths.kernel_json.write_text(json.dumps(asdict(image), indent=1) + "\n")
    return image
