"""`objtier dump`: print every record of a trace as text, in file order."""

from __future__ import annotations

import argparse
import sys

from objtier import bounds as B

NAME = "dump"
HELP = "print every record of a trace as text"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="recording directory (run.otr) or one .otr file")
    parser.add_argument("--tag", default="", help="only these record tags, comma separated "
                        "(e.g. ALLOC,FREE,CONTEXT)")
    parser.add_argument("--no-symbols", action="store_true", help="print contexts as "
                        "module+offset, without symbolization")
    parser.add_argument("--limit", type=B.int_option(0), default=0, metavar="N",
                        help="at most N records per tag (0 = all)")


def _fields(record, dtype, start_ns: int) -> str:
    from objtier.trace import format as F

    parts = []
    for name in dtype.names:
        if name.startswith("reserved"):
            continue
        value = record[name].item() if hasattr(record[name], "item") else record[name]
        if name == "time_ns":
            parts.append(f"t={(value - start_ns) / 1e9:.6f}s")
        elif name in ("addr", "nodemask"):
            parts.append(f"{name}={value:#x}")
        elif name == "kind" and dtype is F.ALLOC:
            parts.append(f"kind={F.ALLOC_KINDS.get(value, value)}")
        elif name == "kind" and dtype is F.FREE:
            parts.append(f"kind={F.FREE_KINDS.get(value, value)}")
        elif name == "source":
            parts.append(f"source={F.SAMPLE_SOURCES.get(value, value)}")
        elif name == "level":
            parts.append(f"level={F.MEM_LEVELS.get(value, value)}")
        elif name == "tlb":
            parts.append(f"tlb={F.TLB_NAMES.get(value, value)}")
        else:
            parts.append(f"{name}={value}")
    return " ".join(parts)


def _dump_file(raw, tags: set[int], limit: int, symbols: bool, out) -> None:
    """Every record of one decoded file (objtier.trace.reader.RawFile), in file order."""
    from objtier.trace import format as F
    from objtier.trace.reader import decode_context, decode_module, decode_named, decode_process
    from objtier.trace.symbolize import symbolize

    h = raw.header
    out.write(f"# {raw.path.name}: format {int(h['version_major'])}.{int(h['version_minor'])} "
              f"kind={ {F.FILE_PROCESS: 'process', F.FILE_PERF: 'perf'}.get(int(h['kind']), 'counters')} "
              f"pid={int(h['pid'])} ppid={int(h['ppid'])} page={int(h['page_bytes'])} "
              f"start_mono_ns={int(h['start_mono_ns'])}\n")
    start_ns = int(h["start_mono_ns"])
    modules: dict[int, str] = {}
    printed: dict[int, int] = {}
    for tag, index, count in raw.blocks:
        name = F.TAG_NAMES.get(tag, str(tag))
        if tags and tag not in tags and tag not in (F.TAG_MODULE,):
            continue
        for i in range(count):
            if limit and printed.get(tag, 0) >= limit:
                break
            printed[tag] = printed.get(tag, 0) + 1
            if tag in F.FIXED:
                record = raw.fixed[tag][index][i]
                out.write(f"{name} {_fields(record, F.FIXED[tag], start_ns)}\n")
                continue
            body = raw.variable[tag][index + i]
            if tag == F.TAG_PROCESS:
                p = decode_process(body)
                config = " ".join(f"{k}={v}" for k, v in p["config"].items())
                out.write(f"PROCESS pid={p['pid']} ppid={p['ppid']} exe={p['exe']} "
                          f"argv={p['argv']} config: {config}\n")
            elif tag == F.TAG_MODULE:
                m = decode_module(body)
                modules[m["id"]] = m["path"]
                if not tags or tag in tags:
                    out.write(f"MODULE id={m['id']} path={m['path']} build_id={m['build_id']} "
                              f"base={m['base']:#x} start={m['start']:#x} end={m['end']:#x}\n")
            elif tag == F.TAG_CONTEXT:
                cid, frames = decode_context(body)
                pairs = [(modules.get(int(m), ""), int(o))
                         for m, o in zip(frames["module"], frames["offset"])]
                texts = (symbolize(pairs) if symbols else
                         [f"{(p[0].rsplit('/', 1)[-1] or '?')}+{p[1]:#x}" for p in pairs])
                out.write(f"CONTEXT id={cid} depth={len(pairs)}\n")
                for text in texts:
                    out.write(f"    {text}\n")
            elif tag == F.TAG_COUNTER_DEF:
                d = decode_named(body, F.COUNTER_DEF_HEAD)
                out.write(f"COUNTER_DEF id={d['id']} name={d['name']} unit={d['unit']}\n")
            elif tag == F.TAG_NAME:
                d = decode_named(body, F.NAME_HEAD)
                out.write(f"NAME id={d['id']} name={d['name']}\n")


def run(args: argparse.Namespace) -> int:
    from objtier.errors import UsageError
    from objtier.trace import format as F
    from objtier.trace.reader import open_trace

    wanted: set[int] = set()
    by_name = {v: k for k, v in F.TAG_NAMES.items()}
    for name in filter(None, (t.strip().upper() for t in args.tag.split(","))):
        if name not in by_name:
            raise UsageError(f"unknown tag '{name}'; known: {', '.join(sorted(by_name))}")
        wanted.add(by_name[name])
    trace = open_trace(args.trace)
    out = sys.stdout
    for raw in trace.files:
        _dump_file(raw, wanted, args.limit, not args.no_symbols, out)
    for warning in trace.warnings:
        sys.stderr.write(f"objtier dump: warning: {warning}\n")
    return 0
