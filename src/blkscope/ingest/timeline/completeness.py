"""Say when a trace is missing part of itself: per-CPU blktrace files left out of the ingest,
or no completions at all. Such a trace still ingests, but every latency and depth built on it
is wrong in a way the numbers alone do not show, so ingest, analyze and the report say it."""

from __future__ import annotations

import glob
import os
import re
from typing import Any

# NAME.blktrace.N, optionally compressed (NAME.blktrace.N.zst)
PER_CPU_FILE = re.compile(r"\.blktrace\.(\d+)(?:\.[A-Za-z0-9]+)?$")


def per_cpu_sets(paths: list[str]) -> dict[str, tuple[list[int], list[int]]]:
    """Per trace prefix (NAME.blktrace): (CPUs given, CPUs whose files exist beside them)."""
    sets: dict[str, tuple[list[int], list[int]]] = {}
    for path in paths:
        m = PER_CPU_FILE.search(path)
        if m is None:
            continue
        prefix = path[: m.start()]
        given, _ = sets.setdefault(prefix, ([], []))
        given.append(int(m.group(1)))
    for prefix, (given, found) in sets.items():
        beside = glob.glob(glob.escape(prefix) + ".blktrace.*")
        found += sorted(
            {int(m.group(1)) for p in beside if (m := PER_CPU_FILE.search(p)) and os.path.isfile(p)}
            | set(given)
        )
        # a CPU given twice (its file plain and compressed) is one CPU: duplicates.py reads it once
        given[:] = sorted(set(given))
    return sets


def assess(
    inputs: list[dict[str, Any]], by_action: dict[str, int], devices: list[dict[str, Any]]
) -> dict[str, Any]:
    """The manifest's `completeness` section: per-CPU files given and found, completions, and
    one warning sentence per problem (empty when the trace looks whole). devices are the
    manifest's device entries (dev, by_action)."""
    completions = int(by_action.get("C", 0))
    binaries = [str(i["path"]) for i in inputs if i.get("format") == "blktrace" and i.get("path")]
    warnings = []
    files = []
    for prefix, (given, found) in sorted(per_cpu_sets(binaries).items()):
        files.append({"trace": os.path.basename(prefix), "cpus_given": given, "cpus_found": found})
        if given != found:
            one = len(given) == 1
            warnings.append(
                f"only CPU{'' if one else 's'} {', '.join(map(str, given))} of {len(found)} "
                f"per-CPU files given (C events: {completions:,}): the events the other CPUs "
                f"logged are missing (files {os.path.basename(prefix)}.blktrace.N)"
            )
    queued = sum(by_action.get(a, 0) for a in ("Q", "D"))
    if completions == 0 and queued:
        warnings.append(
            "no completions (C events: 0): no latency can be measured, and every dispatched "
            "request counts as in flight to the end of the trace"
        )
    elif completions:
        for d in devices:
            acts = d.get("by_action", {})
            if not acts.get("C") and (acts.get("Q") or acts.get("D")):
                warnings.append(f"device {d['dev']}: no completions (C events: 0)")
    return {"per_cpu_files": files, "completions": completions, "warnings": warnings}


def note_cpu_count(manifest: dict[str, Any], cpus: int) -> None:
    """Warn when a trace's per-CPU files are fewer than the CPUs the capture host had."""
    section = manifest.setdefault("completeness", {"per_cpu_files": [], "warnings": []})
    for files in section.get("per_cpu_files", []):
        found = files["cpus_found"]
        if len(found) < cpus and files["cpus_given"] == found:
            section["warnings"].insert(
                0,
                f"only CPU{'' if len(found) == 1 else 's'} {', '.join(map(str, found))} of "
                f"{cpus} per-CPU files found (the capture host had {cpus} CPUs; C events: "
                f"{section.get('completions', 0):,}): the other CPUs' events are missing",
            )
