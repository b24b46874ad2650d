"""The Rust streaming pass (blkscope._core, stream/run.py) against the numba pass it replaces
(stream/numba_run.py), on generated traces: every output equal.

A trace is a mix of IO stories on two request-based devices and a bio-based one (a device
mapper target remapped onto the first), each with a few sectors so that stories collide:
plain Q G I D C lives, merges (M, F) into a request dispatched later, splits (X, recursive),
requeues (R then D again), remaps (A before Q), data-less flushes (Q FWS, G, D FN, C FN 0),
preflush bios ending at a zero-length C, D D C C on one sector, sector reuse, IOs cut by the
trace's start (C without D) or end (no C), Q's lost (queued again unseen), plug, unplug and
timer-unplug events of several tasks, events of two CPUs, ties at one nanosecond, and stray
events. The events are read in batches of a few rows, so the batch ends (plug sessions closed
after 5 ms of silence, requests written once their sessions are final, the depth walk's
horizon) fall everywhere; with the plug clock (Linux >= 6.9) and without.

Compared: every row of `requests` and `bios`, the Q2Q file `_bio_stages` reads, io_dist's
counts and the depth walk's sums. Each example costs ~1 s (two analysis connections); a longer
campaign: BLKSCOPE_DIFFERENTIAL_EXAMPLES=2000 python -m pytest tests/analyze/test_pass_differential.py"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blkscope.analyze.memory import bound_memory
from blkscope.analyze.stream import events as stream_events
from blkscope.analyze.stream import numba_run, run
from blkscope.analyze.stream.depth_run import DEPTH_BIN_SUMS, DEPTH_TIME
from blkscope.analyze.stream.iodist import IO_COUNTS
from blkscope.analyze.stream.q2q import Q2Q_VIEW
from blkscope.analyze.views import connect
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.store.manifest import read_manifest

DISK, OTHER, DM = (8, 0), (8, 16), (253, 0)
SECTORS = (0, 8, 16, 64, 4096, 8192)
COMMS = ("fio", "kworker/u8:4", "jbd2/sda1-8", "?")
PIDS = (100, 101, 102, 7)

Line = tuple[int, int, str, tuple[int, int], str, str, str]  # t, pid, comm, dev, act, rwbs, tail


def _sector(n: int, length: int) -> str:
    return f"{n} + {length}"


@st.composite
def story(draw: st.DrawFn) -> list[Line]:
    """One IO's events (or a stray event), at times relative to the story's start."""
    kind = draw(
        st.sampled_from([
            "plain", "plain", "merged", "front", "split", "split2", "requeue", "remap",
            "flush", "preflush", "cut", "orphan", "lost", "dm", "plug", "stray", "twice",
        ])
    )  # fmt: skip
    dev = draw(st.sampled_from([DISK, DISK, OTHER]))
    sec = draw(st.sampled_from(SECTORS))
    n = draw(st.sampled_from([8, 8, 16, 32]))
    rwbs = draw(st.sampled_from(["W", "WS", "R", "RM", "WSM", "D"]))
    pid = draw(st.sampled_from(PIDS))
    comm = COMMS[PIDS.index(pid)]
    steps = draw(st.lists(st.integers(0, 3000), min_size=12, max_size=12))
    t = 0
    out: list[Line] = []

    def add(
        act: str, tail: str, flags: str = rwbs, d: tuple[int, int] = dev, who: int = pid
    ) -> None:
        nonlocal t
        t += steps[len(out) % len(steps)]
        name = comm if who == pid else "kworker/0:1H"
        out.append((t, who, name, d, act, flags, tail))

    io = _sector(sec, n)
    done = f"{io} [0]"
    if kind in ("plain", "requeue", "cut", "remap"):
        if kind == "remap":
            add("A", f"{io} <- ({DM[0]},{DM[1]}) {sec + 100}")
        add("Q", f"{io} [{comm}]")
        add("G", f"{io} [{comm}]")
        if draw(st.booleans()):
            add("I", f"{io} [{comm}]")
        add("D", f"{io} [{comm}]", who=0)
        if kind == "requeue":
            add("R", f"{io} [0]", who=0)
            add("D", f"{io} [{comm}]", who=0)
        if kind != "cut":
            add("C", done, who=0)
    elif kind in ("merged", "front"):
        # a piece merged into the request of the sectors before (M) or after (F) it
        other = sec + n if kind == "front" else max(sec - n, 0)
        add("Q", f"{_sector(other, n)} [{comm}]")
        add("G", f"{_sector(other, n)} [{comm}]")
        add("Q", f"{io} [{comm}]")
        add("F" if kind == "front" else "M", f"{io} [{comm}]")
        start = min(sec, other)
        add("I", f"{_sector(start, 2 * n)} [{comm}]")
        add("D", f"{_sector(start, 2 * n)} [{comm}]", who=0)
        add("C", f"{_sector(start, 2 * n)} [0]", who=0)
    elif kind in ("split", "split2"):
        half = n // 2
        add("Q", f"{_sector(sec, 2 * n)} [{comm}]")
        add("X", f"{sec} / {sec + half} [{comm}]")
        if kind == "split2":  # the remainder splits again
            add("X", f"{sec + half} / {sec + n} [{comm}]")
        pieces = [(sec, half), (sec + half, half if kind == "split2" else n + half)]
        if kind == "split2":
            pieces.append((sec + n, n))
        for s, m in pieces:
            add("G", f"{_sector(s, m)} [{comm}]")
        for s, m in pieces:
            add("D", f"{_sector(s, m)} [{comm}]", who=0)
        for s, m in pieces:
            add("C", f"{_sector(s, m)} [0]", who=0)
    elif kind == "flush":
        add("Q", f"[{comm}]", flags="FWS")
        add("G", f"[{comm}]", flags="FWS")
        add("D", "[kworker/0:1H]", flags="FN", who=0)
        add("C", "0 [0]", flags="FN", who=0)
    elif kind == "preflush":
        add("Q", f"{io} [{comm}]", flags="FWFSM")
        add("G", f"{io} [{comm}]", flags="FWFSM")
        add("D", "[kworker/0:1H]", flags="FN", who=0)
        add("C", "0 [0]", flags="FN", who=0)
        add("D", f"{io} [{comm}]", flags="WFSM", who=0)
        add("C", done, flags="WFSM", who=0)
        add("C", f"{sec} + 0 [0]", flags="WFSM", who=0)
    elif kind == "orphan":
        add("C", done, who=0)
        if draw(st.booleans()):
            add("D", f"{io} [{comm}]", who=0)
            add("C", done, who=0)
    elif kind == "lost":
        add("Q", f"{io} [{comm}]")
    elif kind == "twice":  # two writers of one sector: D D C C
        for _ in range(2):
            add("Q", f"{io} [{comm}]")
            add("G", f"{io} [{comm}]")
            add("D", f"{io} [{comm}]", who=0)
        add("C", done, who=0)
        add("C", done, who=0)
    elif kind == "dm":
        add("Q", f"{io} [{comm}]", d=DM)
        if draw(st.booleans()):
            add("A", f"{io} <- ({DM[0]},{DM[1]}) {sec}")
            add("Q", f"{io} [{comm}]")
            add("G", f"{io} [{comm}]")
            add("D", f"{io} [{comm}]", who=0)
            add("C", done, who=0)
        add("C", done, d=DM, who=0)
    elif kind == "plug":
        add("P", f"[{comm}]", flags="N")
        for _ in range(draw(st.integers(1, 3))):
            add(draw(st.sampled_from(["U", "UT", "P"])), f"[{comm}] 1", flags="N")
    else:  # a stray event of any action on any sector
        act = draw(st.sampled_from(["Q", "G", "I", "D", "C", "M", "F", "R"]))
        add(act, done if act in ("C", "R") else f"{io} [{comm}]")  # C and R end in [errno]
    return out


@st.composite
def trace(draw: st.DrawFn) -> str:
    """blkparse text of a few stories started at random times (ties allowed), in time order."""
    stories = draw(st.lists(story(), min_size=1, max_size=14))
    starts = draw(
        st.lists(st.integers(0, 12_000_000), min_size=len(stories), max_size=len(stories))
    )
    lines = sorted(
        ((start + line[0], k, line) for k, (start, events) in enumerate(zip(starts, stories, strict=True))
         for line in events),
        key=lambda x: x[0],
    )  # fmt: skip
    text = []
    for seq, (t, k, (_, pid, _comm, dev, act, flags, tail)) in enumerate(lines, start=1):
        cpu = (k + seq) % 2 if draw(st.booleans()) else 0
        text.append(
            f"{dev[0]:3},{dev[1]:<2} {cpu:4} {seq:8} {t // 10**9:5}.{t % 10**9:09d} {pid:5}  "
            f"{act:<2} {flags:>3} {tail}"
        )
    return "\n".join(text) + "\n"


def _pass_outputs(module: Any, ds: Path, plug_clock: bool) -> dict[str, list[tuple[Any, ...]]]:
    """Run a pass (`module.stream_tables`) on dataset ds: its tables' rows, sorted."""
    manifest = read_manifest(ds)
    con = connect(ds, manifest)
    bound_memory(con, ds)
    events = int(manifest.editable().get("events", {}).get("count", 0))
    module.stream_tables(con, ds, plug_clock, events)
    queries = {
        "requests": f"SELECT * FROM read_parquet('{ds / 'requests.parquet'}')",
        "bios": f"SELECT * FROM read_parquet('{ds / 'bios.parquet'}')",
        "q2q": f"SELECT * EXCLUDE (group_key) FROM {Q2Q_VIEW}",
        "q2q groups": f"SELECT count(DISTINCT group_key), count(DISTINCT (group_key, dev_major, "
        f"dev_minor, op_class, process)) FROM {Q2Q_VIEW}",
        "io_dist": f"SELECT * FROM {IO_COUNTS}",
        "depth": f"SELECT * FROM {DEPTH_TIME}",
        "depth bins": f"SELECT * FROM {DEPTH_BIN_SUMS}",
    }
    out = {name: sorted(con.execute(q).fetchall(), key=repr) for name, q in queries.items()}
    con.close()
    return out


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize("plug_clock", [True, False], ids=["plug-clock", "before-6.9"])
@settings(
    max_examples=int(os.environ.get("BLKSCOPE_DIFFERENTIAL_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=trace(), batch_rows=st.sampled_from([3, 7, 64, 1 << 17]))
def test_the_rust_pass_gives_what_the_numba_pass_gave(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    plug_clock: bool,
    text: str,
    batch_rows: int,
) -> None:
    work = tmp_path_factory.mktemp("trace")
    (work / "trace.txt").write_text(text)
    ingest_blkparse([str(work / "trace.txt")], work / "ds")
    monkeypatch.setattr(stream_events, "BATCH_ROWS", batch_rows)
    old = _pass_outputs(numba_run, _copy(work / "ds", work / "old"), plug_clock)
    new = _pass_outputs(run, _copy(work / "ds", work / "new"), plug_clock)
    for name in old:
        assert new[name] == old[name], name
