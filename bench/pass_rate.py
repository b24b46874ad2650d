#!/usr/bin/env python3
"""How fast the streaming pass alone runs: the compiled core's work on a dataset's events
(StreamPass.feed for every batch, then finish), without reading, decoding or writing Parquet.

Usage: python bench/pass_rate.py DATASET [--json]

DATASET is an ingested dataset; nothing in it is written (the rows the pass makes are taken
and dropped). Prints the events, the pass's wall and CPU seconds (the calling thread's: the
pass runs on it, with the GIL released) and events per second of each. `just bench` runs it
on each capture it times.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI does: idle BLAS threads spin

from blkscope.analyze.build import caches_plug_time
from blkscope.analyze.memory import bound_memory
from blkscope.analyze.stream.events import batches
from blkscope.analyze.stream.run import WRITE_ROWS, OpClassNames, _as_the_pass_reads, new_stream
from blkscope.analyze.views import connect
from blkscope.store.manifest import read_manifest


def pass_rate(dataset: Path) -> dict[str, float]:
    """Run the pass over dataset's events; time only the compiled core's calls."""
    manifest = read_manifest(dataset)
    con = connect(dataset, manifest)
    bound_memory(con, dataset)
    stream = new_stream(con, caches_plug_time(manifest.editable()))
    classes = OpClassNames(con, stream)
    wall = cpu = 0.0
    events = 0

    def timed(call: object, *args: object) -> object:
        nonlocal wall, cpu
        w, c = time.perf_counter(), time.thread_time()
        out = call(*args)  # type: ignore[operator]
        wall += time.perf_counter() - w
        cpu += time.thread_time() - c
        return out

    for batch in batches(dataset / "events.parquet", True):
        batch = _as_the_pass_reads(batch)
        classes.cover(batch)
        if not timed(stream.feed, batch):
            raise SystemExit(f"{dataset}: events out of order (the pass reads them sorted)")
        events += batch.num_rows
        if stream.pending_rows() >= WRITE_ROWS:
            timed(stream.take_rows)
    timed(stream.finish)
    timed(stream.take_rows)
    con.close()
    return {
        "events": events,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "events_per_wall_s": round(events / wall) if wall else 0,
        "events_per_cpu_s": round(events / cpu) if cpu else 0,
    }


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    found = pass_rate(Path(argv[0]))
    if "--json" in argv:
        print(json.dumps(found))
    else:
        print(
            f"{found['events']} events in {found['wall_s']} s wall, {found['cpu_s']} CPU-s: "
            f"{found['events_per_wall_s'] / 1e6:.1f} M events/s wall, "
            f"{found['events_per_cpu_s'] / 1e6:.1f} M per CPU-s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
