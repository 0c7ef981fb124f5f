"""Build the guest's initramfs: busybox-static, the 9p modules, /init.

Contents (newc cpio, gzip):
    /bin/busybox + one symlink per applet     from the host's busybox-static
    /init                                     guest_init.sh (this package)
    /lib/modules/<kver>/kernel/...ko          uncompressed copies of the needed modules
    /lib/modules/<kver>/modules.dep           written from each module's .modinfo depends=
    /etc/objtier/modules.order                insmod order derived from that modules.dep
The image is rebuilt only when an input is newer than it.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from objtier.errors import EnvironmentProblem
from objtier.testbed import modules as kmod
from objtier.testbed.fetch import KernelImage

INIT_SCRIPT = Path(__file__).with_name("guest_init.sh")
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")


def find_busybox() -> Path:
    """The host's busybox; Debian's busybox-static package installs a static /bin/busybox."""
    for candidate in BUSYBOX_CANDIDATES:
        if Path(candidate).is_file():
            return Path(candidate)
    raise EnvironmentProblem("busybox-static not found: apt-get install busybox-static")


def _newest_input(image: KernelImage, busybox: Path) -> float:
    return max(INIT_SCRIPT.stat().st_mtime, busybox.stat().st_mtime,
               Path(image.modules).stat().st_mtime, Path(kmod.__file__).stat().st_mtime,
               Path(__file__).stat().st_mtime)


def build_initramfs(image: KernelImage, out: Path, force: bool = False) -> Path:
    """Write the initramfs for `image` to `out` (if missing or stale); returns `out`."""
    busybox = find_busybox()
    if not force and out.is_file() and out.stat().st_mtime >= _newest_input(image, busybox):
        return out
    if not shutil.which("cpio"):
        raise EnvironmentProblem("cpio not found: apt-get install cpio")
    modules_dir = Path(image.modules)
    order = kmod.resolve(modules_dir)
    with tempfile.TemporaryDirectory(prefix="objtier-initramfs-") as tmp:
        root = Path(tmp)
        for sub in ("bin", "sbin", "dev", "proc", "sys", "etc/objtier", "tmp"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy2(busybox, root / "bin" / "busybox")
        applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True,
                                 check=True).stdout.split()
        for applet in applets:
            if applet != "busybox":
                os.symlink("busybox", root / "bin" / applet)
        init = root / "init"
        shutil.copy(INIT_SCRIPT, init)
        init.chmod(0o755)
        guest_modules = root / "lib" / "modules" / image.version
        for name, path, _ in order:
            rel = path.relative_to(modules_dir)
            dest = guest_modules / str(rel).removesuffix(".xz")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(kmod.read_ko(path))
        dep_text = kmod.modules_dep_text(modules_dir, order).replace(".ko.xz", ".ko")
        (guest_modules / "modules.dep").write_text(dep_text)
        (root / "etc" / "objtier" / "modules.order").write_text(
            "\n".join(kmod.load_order_from_modules_dep(dep_text)) + "\n")
        files = subprocess.run(["find", ".", "-mindepth", "1"], cwd=root, capture_output=True,
                               text=True, check=True).stdout
        cpio = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet", "-R", "0:0"], cwd=root,
                              input=files.encode(), capture_output=True)
        if cpio.returncode != 0:
            raise EnvironmentProblem(f"cpio failed: {cpio.stderr.decode().strip()}")
        partial = out.with_suffix(".partial")
        out.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(partial, "wb", compresslevel=6) as fh:
            fh.write(cpio.stdout)
        partial.rename(out)
    return out
