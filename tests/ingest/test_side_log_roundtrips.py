"""Hypothesis round trips of the side logs: values written as the tool prints them (bpftrace's
writeback.bt on both clocks, biosnoop and hist() maps, the capture's meminfo sampler, vmstat,
iostat -x, /proc/partitions, clock.txt, a CSV series; the wall-clock stamps in
test_wall_stamps.py) parse back to the same values, exactly (times are integer nanoseconds; the logs' integers are
held to |value| < 2^62, textlog.LIMIT)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope.ingest.logs.partition_listing import parse_proc_partitions
from blkscope.ingest.logs.registry import PARSERS
from blkscope.ingest.timeline.clock_model import read_clock_pair

u31 = st.integers(0, 2**31 - 1)
REASONS = ["periodic", "background", "sync", "vmscan", "fs_free_space", "laptop_timer"]
comms = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=15)


def _parse(fmt: str, text: str) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.txt"
        path.write_text(text)
        (table,) = PARSERS[fmt](str(path)).values()
    return table.to_pylist()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2**62 - 1), u31, u31, u31, st.sampled_from(REASONS), u31),
        min_size=1,
        max_size=20,
    )
)
def test_writeback_ns(rows: list[tuple[int, int, int, int, str, int]]) -> None:
    text = "Attaching 4 probes...\nMONO_NS              DEVICE   PAGES    REASON us\n"
    text += "".join(
        f"{t:<20} {f'{ma}:{mi}':<8} {pages:<8} {why} {us}\n" for t, ma, mi, pages, why, us in rows
    )
    got = _parse("writeback_ns", text)
    assert [
        (
            r["time_ns"],
            r["dev_major"],
            r["dev_minor"],
            r["pages_left"],
            r["reason"],
            r["duration_ns"],
        )
        for r in got
    ] == [(t, ma, mi, pages, why, us * 1000) for t, ma, mi, pages, why, us in rows]
    assert [r["line_no"] for r in got] == list(range(3, 3 + len(rows)))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 10**12),  # microseconds since start
            comms,
            u31,
            st.sampled_from(["vda", "sda", "nvme0n1", "loop0", "dm-0"]),
            st.sampled_from(["R", "W", "RA", "WS", "FWS", "D", "N", "RM"]),
            st.integers(0, 2**62 - 1),
            u31,
            st.integers(0, 10**9),  # latency in units of 10 us (printed with 2 decimals)
        ),
        min_size=1,
        max_size=20,
    )
)
def test_biosnoop(rows: list[tuple[int, str, int, str, str, int, int, int]]) -> None:
    text = "Attaching 5 probes...\n"
    text += "TIME(s)     COMM           PID    DISK    T SECTOR     BYTES   LAT(ms)\n"
    for us, comm, pid, disk, rwbs, sector, nbytes, lat in rows:
        time_s = f"{us // 10**6}.{us % 10**6:06d}"
        lat_ms = f"{lat // 100}.{lat % 100:02d}"
        text += f"{time_s:<11} {comm:<14} {pid:<6} {disk:<7} {rwbs:<2} {sector:<10} {nbytes:<7} {lat_ms}\n"
    got = _parse("biosnoop", text)
    names = ["time_ns", "comm", "pid", "disk", "rwbs", "sector", "bytes", "latency_ns"]
    assert [tuple(r[n] for n in names) for r in got] == [
        (us * 1000, comm, pid, disk, rwbs, sector, nbytes, lat * 10_000)
        for us, comm, pid, disk, rwbs, sector, nbytes, lat in rows
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(10**17, 4 * 10**18), st.integers(0, 2**40), st.integers(0, 2**40)),
        min_size=1,
        max_size=20,
    )
)
def test_meminfo_samples(rows: list[tuple[int, int, int]]) -> None:
    """Times as the sampler prints them: epoch seconds (9 digits or more) and nanoseconds."""
    text = "".join(
        f"{t // 10**9}.{t % 10**9:09d} Dirty: {dirty} kB Writeback: {wb} kB \n"
        for t, dirty, wb in rows
    )
    got = _parse("meminfo", text)
    want = []
    for i, (t, dirty, wb) in enumerate(rows):
        want += [(i, t, "Dirty", dirty, "kB"), (i, t, "Writeback", wb, "kB")]
    assert [(r["sample"], r["time_ns"], r["key"], r["value"], r["unit"]) for r in got] == want


VMSTAT_COLUMNS = ["r", "b", "swpd", "free", "buff", "cache", "si", "so", "bi", "bo", "in", "cs",
                  "us", "sy", "id", "wa", "st"]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**40), min_size=17, max_size=17), min_size=1, max_size=10))
def test_vmstat(rows: list[list[int]]) -> None:
    text = "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n"
    text += " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n"
    text += "".join(" ".join(f"{v:>2}" for v in row) + "\n" for row in rows)
    got = _parse("vmstat", text)
    assert [[r[c] for c in VMSTAT_COLUMNS] for r in got] == rows
    assert [r["sample"] for r in got] == list(range(len(rows)))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**62 - 1), st.integers(10**14, 2**62 - 1))
def test_clock_pair(mono: int, real: int) -> None:
    """clock.txt: `MONO_NS WALL_NS` (a wall time has 15 digits or more)."""
    assert read_clock_pair(f"{mono} {real}\n") == (mono, real)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**62 - 1), st.integers(-(2**52), 2**52)), min_size=1))
def test_csv_series(rows: list[tuple[int, int]]) -> None:
    text = "mono_ns,latency_us\n" + "".join(f"{t},{v}\n" for t, v in rows)
    got = _parse("series_csv", text)
    assert [(r["time_ns"], r["value"], r["unit"]) for r in got] == [
        (t, float(v), "us") for t, v in rows
    ]


IOSTAT_HEADER = [
    "r/s",
    "rkB/s",
    "rrqm/s",
    "%rrqm",
    "r_await",
    "rareq-sz",
    "w/s",
    "wkB/s",
    "wrqm/s",
    "%wrqm",
    "w_await",
    "wareq-sz",
    "d/s",
    "dkB/s",
    "drqm/s",
    "%drqm",
    "d_await",
    "dareq-sz",
    "f/s",
    "f_await",
    "aqu-sz",
    "%util",
]
IOSTAT_COLUMNS = [
    "r_s", "rkib_s", "rrqm_s", "rrqm_pct", "r_await_ms", "rareq_kib", "w_s", "wkib_s", "wrqm_s",
    "wrqm_pct", "w_await_ms", "wareq_kib", "d_s", "dkib_s", "drqm_s", "drqm_pct", "d_await_ms",
    "dareq_kib", "f_s", "f_await_ms", "aqu_sz", "util_pct",
]  # fmt: skip
hundredths = st.integers(0, 10**9)  # iostat prints two decimals


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 3600),  # seconds since the previous sample
            st.lists(
                st.tuples(
                    st.sampled_from(["vda", "sda", "nvme0n1", "loop0", "dm-0"]),
                    st.lists(hundredths, min_size=22, max_size=22),
                ),
                min_size=1,
                max_size=3,
                unique_by=lambda d: d[0],
            ),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_iostat_x_with_times(samples: list[tuple[int, list[tuple[str, list[int]]]]]) -> None:
    """`iostat -x -t` (sysstat 12, kB): every device value and the gaps between samples."""
    text = "Linux 6.1.0 (vm) \t11/21/26 \t_x86_64_\t(2 CPU)\n\n"
    at, want = 1795304269, []
    for gap, devices in samples:
        at += gap
        stamp = time.strftime("%m/%d/%y %H:%M:%S", time.gmtime(at))
        text += f"{stamp}\navg-cpu:  %user   %nice %system %iowait  %steal   %idle\n"
        text += "           8.66    0.00   11.47    1.81    0.03   78.04\n\n"
        text += "Device " + " ".join(IOSTAT_HEADER) + "\n"
        for name, values in devices:
            text += f"{name:<14}" + " ".join(f"{v // 100}.{v % 100:02d}" for v in values) + "\n"
            want.append((at, name, [v / 100 for v in values]))
        text += "\n\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "iostat.txt"
        path.write_text(text)
        rows = PARSERS["iostat"](str(path))["iostat_log"].to_pylist()
    first = rows[0]["time_ns"] - want[0][0] * 10**9
    assert [
        ((r["time_ns"] - first) // 10**9, r["device"], [r[c] for c in IOSTAT_COLUMNS]) for r in rows
    ] == want


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 86_399), st.integers(0, 4095), u31, st.sampled_from(REASONS),
                  st.integers(0, 10**9)),
        min_size=1,
        max_size=20,
    ).map(lambda rows: sorted(rows))
)  # fmt: skip
def test_writeback_time_of_day(rows: list[tuple[int, int, int, str, int]]) -> None:
    """writeback.bt's own layout: HH:MM:SS from bpftrace's time(), the duration in ms with
    3 decimals (whole microseconds)."""
    lines = ["Attaching 4 probes...", "TIME      DEVICE   PAGES    REASON           ms"]
    for second, minor, pages, reason, us in rows:
        clock = f"{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        lines.append(f"{clock}  8:{minor:<5} {pages:<8} {reason:<16} {us // 1000}.{us % 1000:03d}")
    got = _parse("writeback", "\n".join(lines) + "\n")
    assert [(r["time_ns"], r["dev_minor"], r["pages_left"], r["reason"], r["duration_ns"])
            for r in got] == [
        (second * 10**9, minor, pages, reason, us * 1000)
        for second, minor, pages, reason, us in rows
    ]  # fmt: skip


def _bpftrace_number(value: int) -> str:
    """bpftrace's histogram bounds: powers of 1024 get a K/M/G/T suffix."""
    for suffix, scale in (("T", 2**40), ("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return str(value)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text("abcdefghijklmnopqrstuvwxyz0123456789/:", min_size=1, max_size=15),
        st.tuples(st.integers(0, 40), st.lists(st.integers(0, 2**40), min_size=1, max_size=8)),
        min_size=1,
        max_size=4,
    )
)
def test_bpftrace_histogram(maps: dict[str, tuple[int, list[int]]]) -> None:
    """`hist()` maps as bpftrace prints them: one block per key, consecutive power-of-2
    buckets (zero counts printed between the first and the last)."""
    lines = ["Attaching 1 probe...", ""]
    for key, (first, counts) in maps.items():
        lines.append(f"@bytes[{key}]: ")
        for exp, count in enumerate(counts, start=first):
            low, high = _bpftrace_number(2**exp), _bpftrace_number(2 ** (exp + 1))
            lines.append(f"[{low}, {high})".ljust(22) + f"{count:>8} |@@@    |")
        lines.append("")
    got = _parse("hist_bpftrace", "\n".join(lines))
    assert [(r["name"], r["key"], r["low"], r["high"], r["count"]) for r in got] == [
        ("@bytes", key, 2**exp, 2 ** (exp + 1), count)
        for key, (first, counts) in maps.items()
        for exp, count in enumerate(counts, start=first)
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4095), st.integers(0, 2**20 - 1), st.integers(0, 2**50),
                  st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)),
        min_size=1,
        max_size=20,
    )
)  # fmt: skip
def test_proc_partitions(rows: list[tuple[int, int, int, str]]) -> None:
    """/proc/partitions as the kernel prints it (%4d  %7d %10llu %s)."""
    text = "major minor  #blocks  name\n\n" + "".join(
        f"{major:4d}  {minor:7d} {blocks:10d} {name}\n" for major, minor, blocks, name in rows
    )
    got = parse_proc_partitions(Path("partitions"), text)
    assert [(d.major, d.minor, d.blocks_1k, d.name) for d in got] == rows
