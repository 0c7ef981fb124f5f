"""The instrumenting compiler wrappers behind `objtier cc` and `objtier c++`.

A wrapped compile adds, before the user's arguments:

    -fsanitize-coverage=func,trace-loads,trace-stores   a callback before every load/store
    -finstrument-functions                              a callback at every function entry/exit
                                                        (C++: -finstrument-functions-after-inlining,
                                                        so the header functions libstdc++ marks
                                                        always-inline and never emits, such as
                                                        basic_string::_M_use_local_data, are
                                                        not referenced: clang 16 with libstdc++ 12
                                                        fails to link std::string otherwise)
    -fno-sanitize-link-runtime                          no compiler-rt coverage runtime: its
                                                        weak no-op callbacks in the executable
                                                        would shadow the objtier runtime's
    -g -fno-omit-frame-pointer                          symbolizable contexts

and, when the command links (no -c, -S, -E, -M, -MM, -fsyntax-only), after them:

    -L<lib> -Wl,-rpath,<lib> -lobjtier                  the runtime that receives the callbacks

(`func` is the cheapest coverage kind clang accepts next to trace-loads/trace-stores: alone
it adds no call of its own). Everything else passes through unchanged and the wrapper exits
with the compiler's status. The compiler is $OBJTIER_CLANG / $OBJTIER_CLANGXX when set, else
clang-16 / clang++-16, else clang / clang++.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from objtier.errors import EnvironmentProblem
from objtier.native import NATIVE_DIR

INSTRUMENT_FLAGS = ["-fsanitize-coverage=func,trace-loads,trace-stores", "-fno-sanitize-link-runtime",
                    "-finstrument-functions", "-g", "-fno-omit-frame-pointer"]
NO_LINK_FLAGS = {"-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"}
COMPILERS = {"c": ("OBJTIER_CLANG", ["clang-16", "clang"]),
             "c++": ("OBJTIER_CLANGXX", ["clang++-16", "clang++"])}


def find_compiler(language: str) -> str:
    """The clang driver for language "c" or "c++"."""
    env, names = COMPILERS[language]
    if os.environ.get(env):
        return os.environ[env]
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    raise EnvironmentProblem(f"no {' or '.join(names)} found (install clang-16, or set {env})")


def runtime_lib_dir() -> str:
    lib = NATIVE_DIR / "lib"
    if not (lib / "libobjtier.so").exists():
        raise EnvironmentProblem(f"the objtier runtime is not built ({lib}/libobjtier.so "
                                 "missing); run `make build`")
    return str(lib.resolve())


def links(args: list[str]) -> bool:
    """True when a compiler command with these arguments links an executable or library."""
    return not any(a in NO_LINK_FLAGS for a in args)


def command(language: str, args: list[str]) -> list[str]:
    """The full compiler command for the user's arguments."""
    flags = INSTRUMENT_FLAGS if language == "c" else [
        "-finstrument-functions-after-inlining" if f == "-finstrument-functions" else f
        for f in INSTRUMENT_FLAGS]
    cmd = [find_compiler(language), *flags, *args]
    if links(args):
        lib = runtime_lib_dir()
        cmd += [f"-L{lib}", f"-Wl,-rpath,{lib}", "-lobjtier"]
    return cmd


def run_compiler(language: str, args: list[str]) -> int:
    """Runs the wrapped compiler with the caller's stdin/stdout/stderr; its exit status."""
    cmd = command(language, args)
    if os.environ.get("OBJTIER_CC_VERBOSE") == "1":
        sys.stderr.write(" ".join(cmd) + "\n")
    try:
        return subprocess.run(cmd).returncode
    except OSError as error:
        raise EnvironmentProblem(f"cannot run {cmd[0]}: {error.strerror}") from None
