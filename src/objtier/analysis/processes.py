"""The programs a recording's processes ran: per process its executable, that executable's GNU
build id (from the process's own MODULE records) and its MPI-style rank (the runtime notes
OBJTIER_RANK=N in the PROCESS record when OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID is set).

A process that exec'd keeps its pid and leaves one file per image; the last image's row wins
(the images before an exec rarely hold large objects).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcessProgram:
    pid: int
    exe: str
    build_id: str | None   # lowercase hex, None when the recording has none for the exe
    rank: int | None


def process_programs(trace) -> list[ProcessProgram]:
    """One row per recorded pid, in pid order."""
    modules = trace.modules
    build = {}
    if modules.num_rows:
        for pid, path, bid in zip(modules.column("pid").to_pylist(),
                                  modules.column("path").to_pylist(),
                                  modules.column("build_id").to_pylist()):
            if bid:
                build.setdefault((pid, path), bid)
    rows: dict[int, ProcessProgram] = {}
    for p in sorted(trace.processes, key=lambda p: p.start_mono_ns):
        rank_text = (p.config or {}).get("OBJTIER_RANK", "")
        rank = int(rank_text) if rank_text.isdigit() else None
        rows[p.pid] = ProcessProgram(p.pid, p.exe, build.get((p.pid, p.exe)), rank)
    return [rows[pid] for pid in sorted(rows)]
