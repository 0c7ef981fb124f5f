"""The Python dtypes mirror the C header exactly: sizes, field offsets, no implicit padding,
and the stable context key is computed identically in C and Python."""

import subprocess
from pathlib import Path

import pytest

from objtier.trace import format as F
from objtier.trace.contexts import context_key

REPO = Path(__file__).resolve().parents[2]

HEADER_DIR = REPO / "native" / "include"


def _c_layout(tmp_path):
    lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "objtier/trace_format.h"',
             "int main(void) {"]
    for struct, dtype in F.C_STRUCTS.items():
        lines.append(f'printf("{struct} __sizeof__ %zu\\n", sizeof({struct}));')
        for name in dtype.names:
            lines.append(f'printf("{struct} {name} %zu\\n", offsetof({struct}, {name}));')
    lines.append("return 0; }")
    source = tmp_path / "layout.c"
    source.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run(["gcc", "-std=c11", "-Wpadded", "-Werror", f"-I{HEADER_DIR}", "-o", str(exe),
                    str(source)], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {tuple(line.split()[:2]): int(line.split()[2]) for line in out.splitlines()}


def test_every_struct_matches_its_dtype(tmp_path):
    layout = _c_layout(tmp_path)
    for struct, dtype in F.C_STRUCTS.items():
        assert layout[(struct, "__sizeof__")] == dtype.itemsize, struct
        for name in dtype.names:
            assert layout[(struct, name)] == dtype.fields[name][1], f"{struct}.{name}"


def test_header_constants_match(tmp_path):
    source = tmp_path / "consts.c"
    source.write_text('#include <stdio.h>\n#include "objtier/trace_format.h"\n'
                      'int main(void){printf("%d %d %u %d %d %d %d\\n", OT_VERSION_MAJOR, '
                      'OT_VERSION_MINOR, OT_BLOCK_MAGIC, OT_TAG_SAMPLE, OT_TAG_PLACEMENT, '
                      'OT_FILE_PROCESS, OT_FILE_COUNTERS); return 0;}')
    exe = tmp_path / "consts"
    subprocess.run(["gcc", "-std=c11", f"-I{HEADER_DIR}", "-o", str(exe), str(source)], check=True)
    values = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True,
                                             check=True).stdout.split()]
    assert values == [F.VERSION_MAJOR, F.VERSION_MINOR, F.BLOCK_MAGIC, F.TAG_SAMPLE,
                      F.TAG_PLACEMENT, F.FILE_PROCESS, F.FILE_COUNTERS]


@pytest.mark.parametrize("frames", [
    [("/usr/bin/bfs", 0x1234)],
    [("/opt/x/libfoo.so.1", 0x99), ("/usr/bin/bfs", 0x4000), ("", 0x7FFF12345678)],
    [],
])
def test_context_key_same_in_c_and_python(tmp_path, frames):
    import os
    body = "".join(
        f'h = ot_context_key_frame(h, "{os.path.basename(m)}", {len(os.path.basename(m))}, '
        f'{o}ULL);\n' for m, o in frames)
    source = tmp_path / "key.c"
    source.write_text('#include <stdio.h>\n#include <inttypes.h>\n'
                      '#include "objtier/trace_format.h"\nint main(void){ uint64_t h = '
                      f'OT_FNV64_OFFSET;\n{body} printf("%016" PRIx64 "\\n", h); return 0; }}')
    exe = tmp_path / "key"
    subprocess.run(["gcc", "-std=c11", f"-I{HEADER_DIR}", "-o", str(exe), str(source)], check=True)
    c_key = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip()
    assert c_key == context_key(frames)
