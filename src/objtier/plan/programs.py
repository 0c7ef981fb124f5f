"""Sections of a plan made from a multi-process recording: one per program.

A launcher (a shell script, `python`, `make`, `mpirun`, `srun`) recorded with --follow-forks
leaves objects of several processes. Their plan holds one section per program — keyed by the
executable's GNU build id (its file name when it has none) and, with per_rank, by the
process's MPI-style rank too — and the runtime of each process applies only the section of its
own binary (and rank): native/runtime/plan.c, `program` records of the text form.

Processes of one program (MPI ranks, forked workers) share its section by default: entries
with the same match (phase, context key, occurrence, sizes) from several of them are written
once, with the decision for the process whose object had the most accesses. Every process of
the program then applies that decision to its own object, so the locked total of such a run
can exceed the plan's budget by up to the number of processes: `--per-rank` gives each rank
its own section instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from objtier.errors import UsageError


@dataclass
class ProgramSections:
    programs: list[dict[str, Any]]   # path, build_id, size, rank, pids
    program_of: np.ndarray           # int64 per object-table row: index into programs, -1 none

    @classmethod
    def from_processes(cls, processes: Sequence[Any], object_ids: np.ndarray,
                       pid_of_object: dict[int, int], per_rank: bool,
                       identity: Callable[[str], dict[str, Any]]) -> "ProgramSections | None":
        """processes: rows with pid, exe, build_id, rank (objtier.analysis.processes);
        object_ids: the object table's `object` column; pid_of_object: object id -> pid.
        None when one process was recorded and per_rank is off (a plain plan). A recording
        of several processes gets sections even when one of them holds every object (a
        launcher script and its program), so that the launcher applies nothing."""
        pids = sorted({pid_of_object[int(o)] for o in object_ids.tolist()
                       if int(o) in pid_of_object})
        if not pids or (len(pids) <= 1 and len(processes) <= 1 and not per_rank):
            return None
        by_pid = {p.pid: p for p in processes}
        if per_rank and any(by_pid.get(pid) is None or by_pid[pid].rank is None
                            for pid in pids):
            raise UsageError("--per-rank: the recording's processes carry no rank (none of "
                             "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID was set when they "
                             "were recorded)")
        programs: list[dict[str, Any]] = []
        index: dict[tuple, int] = {}
        section_of_pid: dict[int, int] = {}
        for pid in pids:
            proc = by_pid.get(pid)
            if proc is None or not proc.exe:
                continue
            rank = proc.rank if per_rank else None
            key = (proc.build_id or os.path.basename(proc.exe), rank)
            if key not in index:
                disk = identity(proc.exe)
                index[key] = len(programs)
                programs.append({"path": disk["path"] or proc.exe,
                                 "build_id": proc.build_id or disk["build_id"],
                                 "size": disk["size"], "rank": rank, "pids": []})
            programs[index[key]]["pids"].append(pid)
            section_of_pid[pid] = index[key]
        program_of = np.array([section_of_pid.get(pid_of_object.get(int(o), -1), -1)
                               for o in object_ids.tolist()], dtype=np.int64)
        return cls(programs, program_of)

    def warnings(self) -> list[str]:
        """One line per section that several processes share (each applies all of it)."""
        return [f"section {i} ({os.path.basename(p['path'])}) is applied by each of its "
                f"{len(p['pids'])} processes, which may lock up to {len(p['pids'])} times its "
                f"fast bytes in all; plan with --per-rank for one section per rank"
                for i, p in enumerate(self.programs) if len(p["pids"]) > 1]

    def main_binary(self) -> dict[str, Any]:
        """The `binary` of the plan: the program with the most processes, then the first."""
        p = max(self.programs, key=lambda p: len(p["pids"]))
        return {"path": p["path"], "build_id": p["build_id"], "size": p["size"]}

    def split(self, objects, placements: dict[str, Any], plan_entries: Callable,
              folios: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(entries, large_folios records) with their `program` index; one decision per match
        within a program (the entry with the most accesses)."""
        entries: list[dict[str, Any]] = []
        for i in range(len(self.programs)):
            mine = self.program_of == i
            chosen: dict[tuple, dict[str, Any]] = {}
            for phase, placement in placements.items():
                for e in plan_entries(objects, placement, phase, mask=mine):
                    match = (e["phase"], e["context_key"], e["occurrence"], e["size_min"],
                             e["size_max"])
                    if match not in chosen or e["accesses"] > chosen[match]["accesses"]:
                        chosen[match] = {**e, "program": i}
            entries.extend(chosen.values())
        # folio records name objects by (context_key, occurrence, size): give each the program
        # of an object it names, once per program
        row_of = {}
        for row, (key, occ, size) in enumerate(zip(objects.context_key.tolist(),
                                                   objects.occurrence.tolist(),
                                                   objects.size.tolist())):
            if self.program_of[row] >= 0:
                row_of.setdefault((key, occ, size, int(self.program_of[row])), row)
        records, seen = [], set()
        for r in folios:
            for i in range(len(self.programs)):
                key = (r["context_key"], r["occurrence"], r["size_min"], i)
                if key in row_of and key not in seen:
                    seen.add(key)
                    records.append({**r, "program": i})
        return entries, records


def program_sections(raw, objects, processes: Sequence[Any], per_rank: bool
                     ) -> ProgramSections | None:
    """Sections for an object table read from a recording: raw is its pyarrow table (object,
    pid columns), objects the planner's ObjectTable of it, processes the recording's
    objtier.analysis.processes rows. None for a one-process recording without per_rank, or a
    table with no pid column (an object-table file)."""
    from objtier.plan.binary import identity

    if "pid" not in getattr(raw, "column_names", ()):
        if per_rank:
            raise UsageError("--per-rank needs a recording (its processes and their ranks), "
                             "not an object table")
        return None
    if len(processes) <= 1 and not per_rank:
        return None
    pid_of = dict(zip(raw.column("object").to_pylist(), raw.column("pid").to_pylist()))
    return ProgramSections.from_processes(processes, objects.object, pid_of, per_rank, identity)
