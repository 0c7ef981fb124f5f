"""The `objtier` command line: one module per subcommand in objtier.commands.

Each subcommand module defines:
    NAME: str                     the subcommand ("record", "report", ...)
    HELP: str                     one line for `objtier --help`
    add_arguments(parser) -> None
    run(args) -> int              the exit code
Modules are discovered, so adding a subcommand is adding one module.
Every ObjtierError reaches the user as one line on stderr and a non-zero exit code; so do an
OSError no command translated (exit 1) and, as a last resort, any other exception (exit 70,
"internal error": the traceback is shown only with OBJTIER_DEBUG=1).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from types import ModuleType

from objtier import __version__
from objtier.errors import ObjtierError


OS_ERROR_EXIT = 1          # an OSError no command turned into a typed error
INTERNAL_ERROR_EXIT = 70   # EX_SOFTWARE: a defect in objtier


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line (exit code 2), without the usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: {message}\n")  # prog: "objtier" or "objtier <command>"
        raise SystemExit(2)


def discover_commands(only: str | None = None) -> list[ModuleType]:
    """Every subcommand module; with `only`, just the module of that subcommand when one is
    named after it ("export-damos" -> export_damos.py), else every module (so that argparse
    lists the choices). Importing one module instead of all keeps `objtier record` quick."""
    import objtier.commands as package

    infos = sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name)
    if only and not only.startswith("_"):
        wanted = only.replace("-", "_")
        if any(info.name == wanted for info in infos):
            module = importlib.import_module(f"objtier.commands.{wanted}")
            if getattr(module, "NAME", None) == only and hasattr(module, "run"):
                return [module]
    modules = []
    for info in infos:
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"objtier.commands.{info.name}")
        if hasattr(module, "NAME") and hasattr(module, "run"):
            modules.append(module)
    return modules


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="objtier",
        description="Object-level tiered memory: record which allocations are hot, plan which "
        "belong in fast memory, enforce the plan, and measure it against the kernel.",
    )
    parser.add_argument("--version", action="version", version=f"objtier {__version__}")
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND", parser_class=_Parser)
    for module in discover_commands(only):
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    try:
        words = rewrite_argv(words)
    except ObjtierError as error:
        sys.stderr.write(f"objtier {words[0]}: {one_line(error)}\n")
        return error.exit_code
    args = parser.parse_args(words)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except ObjtierError as error:
        sys.stderr.write(f"objtier {args.subcommand}: {one_line(error)}\n")
        return error.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"objtier {args.subcommand}: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except OSError as error:  # the file system or the machine refused: not a bug of ours
        where = f": {error.filename}" if error.filename else ""
        sys.stderr.write(f"objtier {args.subcommand}: {error.strerror or one_line(error)}"
                         f"{where}\n")
        return OS_ERROR_EXIT
    except Exception as error:  # a defect: one line, the traceback only when asked for
        if os.environ.get("OBJTIER_DEBUG"):
            raise
        sys.stderr.write(f"objtier {args.subcommand}: internal error: "
                         f"{type(error).__name__}: {one_line(error)} (run with OBJTIER_DEBUG=1 "
                         f"for the traceback, and please report it)\n")
        return INTERNAL_ERROR_EXIT


def rewrite_argv(words: list[str]) -> list[str]:
    """The words in this release's spelling: a subcommand module may define
    rewrite_argv(words after the subcommand) -> words, to keep an earlier release's spelling
    of its options working for one release (it may raise ObjtierError)."""
    if not words or words[0].startswith("-"):
        return words
    for module in discover_commands(words[0]):
        if getattr(module, "NAME", None) == words[0] and hasattr(module, "rewrite_argv"):
            return [words[0]] + module.rewrite_argv(words[1:])
    return words


def one_line(error: BaseException) -> str:
    """The first line of an error's message, at most 300 characters."""
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line if len(line) <= 300 else line[:297] + "..."
