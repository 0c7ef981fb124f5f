"""`objtier testbed fetch|up|run|down|status`: the two-node QEMU test machine (docs/testbed.md)."""

from __future__ import annotations

import json
import os
import sys

from objtier import bounds as B
from objtier.errors import UsageError

NAME = "testbed"
HELP = "two-node QEMU guest (node 1: CPU-less lower memory tier): fetch, up, run, down, status"


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    fetch = sub.add_parser("fetch", help="download and extract the guest kernel, build the initramfs")
    fetch.add_argument("--suite", default=None,
                       help="Debian suite to take linux-image-amd64 from (default bookworm-backports)")
    up = sub.add_parser("up", help="boot the guest in the background and wait until it takes commands")
    up.add_argument("--cpus", type=B.int_option(1), default=2, help="vCPUs, all on node 0 (default 2)")
    up.add_argument("--fast-mib", type=B.int_option(1), default=1024, help="node 0 memory in MiB (default 1024)")
    up.add_argument("--slow-mib", type=B.int_option(1), default=1024, help="node 1 memory in MiB (default 1024)")
    up.add_argument("--timeout", type=B.float_option(0, lo_open=True, unit="s"), default=300.0, help="boot timeout in seconds")
    run = sub.add_parser("run", help="run a command in the guest; exits with its exit status")
    run.add_argument("--cwd", default=None, help="working directory in the guest (default: project root)")
    run.add_argument("-e", "--env", action="append", default=[], metavar="NAME=VALUE",
                     help="environment variable for the command (repeatable)")
    run.add_argument("--timeout", type=B.float_option(0, lo_open=True, unit="s"), default=None, help="kill the command after SECONDS")
    run.add_argument("--shell", action="store_true",
                     help="treat the arguments as one shell command line (sh -c)")
    run.add_argument("argv", nargs="+", metavar="CMD", help="command and arguments (use -- before CMD)")
    sub.add_parser("down", help="power the guest off and clean up")
    status = sub.add_parser("status", help="is a guest running; kernel, boot time, memory shape")
    status.add_argument("--json", action="store_true", help="print the status as JSON")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args) -> int:
    from objtier.testbed import MachineConfig, Testbed, TestbedPaths, fetch_kernel
    from objtier.testbed.fetch import DEFAULT_SUITE
    from objtier.testbed.initramfs import build_initramfs

    paths = TestbedPaths.default()
    if args.action == "fetch":
        image = fetch_kernel(paths, suite=args.suite or DEFAULT_SUITE, log=_log)
        initramfs = build_initramfs(image, paths.initramfs(image.version))
        print(f"kernel {image.package}\nvmlinuz {image.vmlinuz}\ninitramfs {initramfs}")
        return 0
    if args.action == "up":
        config = MachineConfig(cpus=args.cpus, fast_mib=args.fast_mib, slow_mib=args.slow_mib)
        tb = Testbed(paths, config, log=_log)
        if tb.is_running():
            _log(f"testbed: already running (pid {tb.pid()})")
            return 0
        tb.start(detached=True, timeout=args.timeout)
        print(f"guest up: pid {tb.pid()}, ready after {tb.boot_seconds:.1f} s")
        return 0
    if args.action == "run":
        env = {}
        for item in args.env:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise UsageError(f"--env wants NAME=VALUE, got {item!r}")
            env[name] = value
        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        cmd = " ".join(argv) if args.shell else argv
        cwd = args.cwd or _guest_cwd(paths)
        result = Testbed(paths).attach().run(cmd, cwd=cwd, env=env, timeout=args.timeout,
                                             stream=True)
        return result.returncode
    if args.action == "down":
        stopped = Testbed(paths).stop()
        print("guest stopped" if stopped else "no guest was running")
        return 0
    if args.action == "status":
        info = Testbed(paths).status()
        if args.json:
            print(json.dumps(info, indent=1))
        elif info["running"]:
            cfg = info.get("config", {})
            print(f"running: pid {info.get('pid')}, kernel {info.get('kernel')}, "
                  f"boot {info.get('boot_seconds')} s, node0 {cfg.get('fast_mib')} MiB + "
                  f"node1 {cfg.get('slow_mib')} MiB, run dir {info['run_dir']}")
        else:
            print(f"not running; kernel {'fetched: ' + info['kernel'] if info['kernel'] else 'not fetched'}")
        return 0 if info["running"] else 1
    raise UsageError(f"unknown action {args.action}")


def _guest_cwd(paths) -> str:
    """The host's cwd when the guest sees it read-write (inside the project), else the project root."""
    from objtier.testbed.paths import repo_root

    here, repo = os.getcwd(), str(repo_root())
    return here if here == repo or here.startswith(repo + os.sep) else repo
