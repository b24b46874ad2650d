"""What the fuzz campaign feeds: one Target per input format, each with real seed files, the
mutations that fit it and the public entry point that reads it.

To add a format: add a `Target` to `TARGETS` below with
- `name`: the format's name in the campaign report,
- `seeds`: real samples (small: every input is a mutation of one of them),
- `run(path, scratch, rng)`: read the file at `path` through the library's public entry
  point (write any output under `scratch`); bad input must raise a BlkscopeError,
- `mutators`: a weighted table from `mutate` (TEXT, BINARY, JSON, or your own),
- `exhaustive`: a function yielding every variant of a seed that must always be tried
  (by default, the seed cut at every offset),
- `file_name`: the name the input is written under (a few readers look at names).
The campaign and the test-suite slice pick it up from there (`tests/fuzz/test_fuzz.py`).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from blkscope.files.handmade import HandMap, hand_rows, read_hand_map
from blkscope.files.rows import extents_table
from blkscope.ingest.blkparse.text_stream import BlkparseTextParser, parse_source
from blkscope.ingest.blktrace.decode import decode
from blkscope.ingest.blktrace.records import read_records
from blkscope.ingest.block_events import ingest_events
from blkscope.ingest.capture_doc import read_capture_json
from blkscope.ingest.detect import detect_format
from blkscope.ingest.folder import ingest_folder
from blkscope.ingest.logs.partition_listing import partitions_table, read_partitions
from blkscope.ingest.logs.registry import PARSERS
from blkscope.ingest.logs.textlog import read_text
from blkscope.ingest.sources import open_source
from blkscope.ingest.timeline.clock_model import read_clock_pair
from blkscope.store.manifest import read_manifest_doc as read_manifest
from tests.fuzz import mutate as M
from tests.fuzz.memory import memory_datasets

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ROOT / "tests" / "data" / "formats"
ANALYZE = ROOT / "tests" / "data" / "analyze"
CAPTURE = ROOT / "tests" / "data" / "issue5" / "jbd2-commit"

Run = Callable[[Path, Path, random.Random], None]


def _f(*names: str) -> tuple[Path, ...]:
    return tuple(FORMATS / n for n in names)


@dataclass(frozen=True)
class Target:
    """One input format: seeds, how to mutate them, and the entry point that reads them."""

    name: str
    seeds: tuple[Path, ...]
    run: Run
    mutators: list[tuple[float, M.Mutator]]
    exhaustive: Callable[[bytes], Iterator[bytes]] = M.truncations
    file_name: str = "input"
    weight: float = 1.0
    splice_from: tuple[Path, ...] = field(default=())
    # Inputs that are not one file (a capture folder) are built by this instead.
    build: Callable[[random.Random, Path], Path] | None = None
    # Seeds cut to their first lines: where each line costs tens of microseconds (a Python
    # parser per line), every extra seed line slows each input and adds ~100 truncations.
    seed_lines: int | None = None

    def seed_bytes(self) -> list[bytes]:
        """The seeds' contents (compressed seeds are read decompressed), read once."""
        if self.name not in _SEED_CACHE:
            seeds = [_read(p) for p in self.seeds]
            if self.seed_lines is not None:
                seeds = [b"".join(s.splitlines(True)[: self.seed_lines]) for s in seeds]
            _SEED_CACHE[self.name] = seeds
        return _SEED_CACHE[self.name]

    def table(self) -> list[tuple[float, M.Mutator]]:
        """The mutators, plus pasting lines of the other formats' samples."""
        if not self.splice_from:
            return self.mutators
        if self.name not in _TABLE_CACHE:
            others = [p.read_bytes() for p in self.splice_from]
            _TABLE_CACHE[self.name] = [*self.mutators, (1.0, M.splice(others))]
        return _TABLE_CACHE[self.name]


_SEED_CACHE: dict[str, list[bytes]] = {}
_TABLE_CACHE: dict[str, list[tuple[float, M.Mutator]]] = {}


def _read(path: Path) -> bytes:
    source = open_source(str(path))
    try:
        return source.stream.read()
    finally:
        source.close()


# The share of ingests that write and commit a real dataset; the others keep it in memory
# (tests/fuzz/memory.py: same checks, without Parquet files, threads, lock and rename).
WRITE_SHARE = 0.05


def _dataset_writes(rng: random.Random) -> AbstractContextManager[None]:
    return nullcontext() if rng.random() < WRITE_SHARE else memory_datasets()


def _ingest(path: Path, scratch: Path, rng: random.Random) -> None:
    """The whole ingest of one trace file, manifest included (in memory, or on disk)."""
    out = scratch / "ds"
    try:
        with _dataset_writes(rng):
            ingest_events([str(path)], out, strict=rng.random() < 0.3)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _blkparse(path: Path, scratch: Path, rng: random.Random) -> None:
    if rng.random() < 0.3:  # the whole ingest, manifest included
        _ingest(path, scratch, rng)
        return
    source = open_source(str(path))
    try:
        parser = BlkparseTextParser(str(path), 0, strict=rng.random() < 0.2)
        for _ in parse_source(parser, source):
            pass
    finally:
        source.close()


def _blktrace(path: Path, scratch: Path, rng: random.Random) -> None:
    if rng.random() < 0.1:
        _ingest(path, scratch, rng)
        return
    records = read_records(str(path))
    trace = decode([records], [0])
    for _ in trace.slices(50):
        pass


def _side_log(fmt: str) -> Run:
    def run(path: Path, scratch: Path, rng: random.Random) -> None:
        pick = rng.random()
        if pick < 0.2:
            detected = detect_format(str(path))  # detect first, as a capture folder does
            if detected in PARSERS:
                PARSERS[detected](str(path))
        elif pick < 0.3:
            PARSERS[rng.choice(sorted(PARSERS))](str(path))  # the wrong parser
        else:
            PARSERS[fmt](str(path))

    return run


def _clock(path: Path, scratch: Path, rng: random.Random) -> None:
    read_clock_pair(read_text(str(path)))
    if rng.random() < 0.2:
        _in_capture(path, scratch, "clock.txt", rng)


def _capture_json(path: Path, scratch: Path, rng: random.Random) -> None:
    read_capture_json(str(path))
    if rng.random() < 0.2:
        _in_capture(path, scratch, "capture.json", rng)


_BASE: dict[str, Path] = {}


def base_dataset(scratch: Path) -> Path:
    """The small real capture ingested and analysed once per process (a worker's fixture)."""
    if "ds" not in _BASE:
        from blkscope.pipeline import analyze

        out = scratch.parent / f"base-{os.getpid()}"
        if not (out / "manifest.json").exists():
            ingest_folder(CAPTURE, out)
            analyze(out).close()
        _BASE["ds"] = out
    return _BASE["ds"]


def copy_dataset(base: Path, dest: Path) -> Path:
    """A copy of a dataset made of hard links (cheap); replace files in it, never write them."""
    dest.mkdir()
    for item in base.iterdir():
        os.link(item, dest / item.name)
    return dest


# The manifest's keys every command reads (row counts, devices, events, what is shown on every
# output): damaged there first, the rest by json_confusion's draw over every node.
_READ_KEYS = ("tables", "devices", "events", "ingest", "completeness", "reconciliation", "skipped")
_HOSTILE = [*M._CONFUSED, -5, 2**63, "1e400", {"rows": 1}, [{}]]


def manifest_damage(rng: random.Random, data: bytes) -> bytes:
    """One node under the keys every command reads given a hostile value (or dropped); the
    literal 1e400 where a number was."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # an earlier mutation broke the JSON already
        return M.flip_bytes(rng, data)
    paths = [p for p in M._nodes(doc) if p and isinstance(doc, dict) and p[0] in _READ_KEYS]
    if not paths:
        return M.json_confusion(rng, data)
    path = rng.choice(paths)
    if rng.random() < 0.1:
        doc = M._replace(doc, path, None, delete=True)
        return json.dumps(doc).encode()
    value = rng.choice(_HOSTILE)
    text = json.dumps(M._replace(doc, path, "@@VALUE@@"))
    literal = "1e400" if value == "1e400" else json.dumps(value)
    return text.replace('"@@VALUE@@"', literal).encode()


def _build_manifest(rng: random.Random, scratch: Path) -> Path:
    base = base_dataset(scratch)
    folder = copy_dataset(base, scratch / "dataset")
    table = [*M.JSON, (6, manifest_damage)]
    data = M.mutate(rng, (base / "manifest.json").read_bytes(), table)
    (folder / "manifest.json").unlink()
    (folder / "manifest.json").write_bytes(data)
    return folder


def _manifest(path: Path, scratch: Path, rng: random.Random) -> None:
    from blkscope.analyze.build import caches_plug_time
    from blkscope.analyze.findings import knobs_from_manifest
    from blkscope.reports.make_report import make_report

    try:
        if rng.random() < 0.03:
            make_report(path, scratch / "report.html", timestamp=False)
            return
        manifest = read_manifest(path)
        knobs_from_manifest(manifest)
        caches_plug_time(manifest)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _in_capture(path: Path, scratch: Path, name: str, rng: random.Random) -> None:
    """Ingest the small real capture folder with this file in place of its own."""
    folder = scratch / "capture"
    shutil.copytree(CAPTURE, folder)
    try:
        shutil.copyfile(path, folder / name)
        with _dataset_writes(rng):
            ingest_folder(folder, scratch / "capture-ds")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(scratch / "capture-ds", ignore_errors=True)


_FOLDER_EXTRAS = _f(
    "iostat_new_mt.txt",
    "vmstat_capture.txt",
    "meminfo_capture.txt",
    "prober.csv",
    "biosnoop_capture.txt",
    "writeback.txt",
)


def _build_capture(rng: random.Random, scratch: Path) -> Path:
    """The small real capture plus side logs, one file mutated, sometimes a hostile entry."""
    folder = scratch / "capture"
    shutil.copytree(CAPTURE, folder)
    for extra in _FOLDER_EXTRAS:
        if rng.random() < 0.5:
            shutil.copyfile(extra, folder / extra.name.replace("_capture", ""))
    victim = rng.choice(sorted(folder.iterdir()))
    data = _read(victim)
    table = M.JSON if victim.suffix == ".json" else M.TEXT
    victim.unlink()
    if victim.suffix == ".zst":  # written plain: the mutation must reach the text
        victim = victim.with_suffix("")
    victim.write_bytes(M.mutate(rng, data, table))
    if rng.random() < 0.3:
        _hostile_entry(rng, folder, scratch)
    return folder


def _hostile_entry(rng: random.Random, folder: Path, scratch: Path) -> None:
    """A symlink out of the folder, a FIFO, a link loop, an empty file or another trace."""
    outside = scratch / "outside.txt"
    outside.write_bytes((FORMATS / "iostat_new_mt.txt").read_bytes())
    how = rng.randrange(7)
    if how == 0:
        (folder / "iostat.txt").unlink(missing_ok=True)
        (folder / "iostat.txt").symlink_to(outside)
    elif how == 1:
        (folder / "passwd.txt").symlink_to("/etc/passwd")
    elif how == 2:
        (folder / "vmstat.txt").unlink(missing_ok=True)
        os.mkfifo(folder / "vmstat.txt")
    elif how == 3:
        (folder / "loop").symlink_to(folder)
    elif how == 4:
        (folder / "empty.txt").write_bytes(b"")
    elif how == 5:
        (folder / "sub").mkdir()
        shutil.copyfile(FORMATS / "syn.blkparse.txt", folder / "sub" / "blkparse.txt")
    else:
        (folder / "dangling.txt").symlink_to(scratch / "nowhere")


LOOP_TAIL = ROOT / "fixtures" / "loop-split-merge-tail"


def _cut_at_record(rng: random.Random, data: bytes) -> bytes:
    offsets = M.record_offsets(data)
    return data[: rng.choice(offsets)] if offsets else data


def _build_duplicated(rng: random.Random, scratch: Path) -> Path:
    """A capture folder holding some of its events twice: a per-CPU file plain beside its
    .zst, copied under another CPU, cut short, with records changed; the text beside the
    binaries (or alone) with a block pasted in, given twice, or another trace's."""
    folder = scratch / "capture"
    folder.mkdir()
    binaries = rng.random() < 0.7
    if binaries:
        for n in (0, 1):
            shutil.copyfile(
                LOOP_TAIL / f"trace.blktrace.{n}.zst", folder / f"trace.blktrace.{n}.zst"
            )
        raw = {n: _read(LOOP_TAIL / f"trace.blktrace.{n}.zst") for n in (0, 1)}
        for _ in range(rng.choice([1, 1, 2, 3])):
            n = rng.choice([0, 1])
            how = rng.randrange(4)
            if how == 0:  # what zstd -d leaves beside the .zst
                data = raw[n]
            elif how == 1:  # cut short at a record boundary
                data = _cut_at_record(rng, raw[n])
            elif how == 2:  # some records changed (sequence, time, sector...)
                data = M.mutate(rng, raw[n], M.BINARY)
            else:  # the other CPU's file
                data = raw[1 - n]
            name = rng.choice(
                [f"trace.blktrace.{n}", f"trace.blktrace.{n + 2}", f"copy.blktrace.{n}"]
            )
            (folder / name).write_bytes(data)
    if not binaries or rng.random() < 0.5:
        text = _read(LOOP_TAIL / "blkparse.txt.zst")
        if rng.random() < 0.3:
            text = _read(CAPTURE / "blkparse.txt.zst")  # another trace's events
        if rng.random() < 0.5:
            text = M.mutate(
                rng, text, [(2, M.duplicate_block), (1, M.time_shift), (1, M.delete_block)]
            )
        (folder / "blkparse.txt").write_bytes(text)
        if rng.random() < 0.3:
            (folder / "blkparse.txt.zst").write_bytes(M.COMPRESSORS["zstd"](text))
    return folder


def _duplicated(path: Path, scratch: Path, rng: random.Random) -> None:
    """The folder, or its block-event files given one by one, ingested."""
    try:
        with _dataset_writes(rng):
            strict = rng.random() < 0.3
            if rng.random() < 0.7:
                ingest_folder(path, scratch / "capture-ds", strict=strict)
            else:
                files = sorted(str(f) for f in path.iterdir())
                picked = [f for f in files if rng.random() < 0.7] or files
                ingest_events(picked, scratch / "capture-ds", strict=strict)
    finally:
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(scratch / "capture-ds", ignore_errors=True)


def _build_damaged_trace(rng: random.Random, scratch: Path) -> Path:
    """A small real trace with sectors past any device, times decades away, blocks moved or
    pasted in: what the analysis and the report then make of it."""
    # the analysis' compiled kernels, loaded (or compiled: minutes) once per process while
    # building, never inside an input's time limit
    base_dataset(scratch)
    trace = scratch / "trace.txt"
    seed = rng.choice([CAPTURE / "blkparse.txt.zst", FORMATS / "syn.blkparse.txt"])
    table: list[tuple[float, M.Mutator]] = [
        (3, M.huge_field), (2, M.time_shift), (1, M.duplicate_block), (1, M.delete_block),
        (1, M.swap_number),
    ]  # fmt: skip
    trace.write_bytes(M.mutate(rng, _read(seed), table))
    return trace


def _analysis(path: Path, scratch: Path, rng: random.Random) -> None:
    """Ingest, analyse and (a third of the time) report: every stage on a damaged trace."""
    from blkscope.pipeline import analyze
    from blkscope.reports.make_report import make_report

    out = scratch / "analysed-ds"
    try:
        ingest_events([str(path)], out, strict=rng.random() < 0.1)
        if rng.random() < 0.3:
            make_report(out, scratch / "report.html", timestamp=False)
        else:
            analyze(out).close()
    finally:
        shutil.rmtree(out, ignore_errors=True)
        (scratch / "report.html").unlink(missing_ok=True)


def _capture_folder(path: Path, scratch: Path, rng: random.Random) -> None:
    try:
        with _dataset_writes(rng):
            ingest_folder(path, scratch / "capture-ds", strict=rng.random() < 0.2)
    finally:
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(scratch / "capture-ds", ignore_errors=True)


def _file_map(path: Path, scratch: Path, rng: random.Random) -> None:
    hand = HandMap()
    read_hand_map(str(path), hand, strict=rng.random() < 0.3)
    size = rng.choice([None, 4096])
    extents_table(hand_rows(hand, (7, 1), rng.choice([0, 2048]), size))


def _partitions(path: Path, scratch: Path, rng: random.Random) -> None:
    parts, _ = read_partitions([path])
    partitions_table(parts)


_TEXT_SAMPLES = _f(
    "iostat_new_mt.txt",
    "vmstat_t.txt",
    "meminfo_capture.txt",
    "writeback_ns.txt",
    "biosnoop_que.txt",
    "bt_hist.txt",
    "prober.csv",
    "syn.blkparse.txt",
)

# Tracepoint text: the first 400 lines of each real capture in tests/data/tracepoints.
_TRACEPOINTS = ROOT / "tests" / "data" / "tracepoints" / "fuzz-seeds"


def _built(
    name: str, run: Run, build: Callable[[random.Random, Path], Path], weight: float
) -> Target:
    """A target whose every input is built whole (a folder, several files), not mutated from
    seed bytes: no seeds, no exhaustive variants."""
    return Target(name, (), run, [], exhaustive=lambda data: iter(()), weight=weight, build=build)


TARGETS: list[Target] = [
    Target(
        "blkparse",
        (
            *_f("mq30.blkparse.txt", "bfq.blkparse.txt", "syn.blkparse.txt"),
            ANALYZE / "kyber-split-discard.blkparse.txt",
            ANALYZE / "synthetic-dm-remap.blkparse.txt",
        ),
        _blkparse,
        M.TEXT,
        weight=3,
        splice_from=_TEXT_SAMPLES,
    ),
    Target(
        "tracepoint text",
        tuple(
            _TRACEPOINTS / f"{n}.txt"
            for n in ("ftrace", "trace-cmd", "perf", "blk-text", "blk-classic")
        ),
        _ingest,
        M.TEXT,
        splice_from=_TEXT_SAMPLES,
        seed_lines=120,  # every event kind of the 400 (ftrace's first back merge: line 108)
    ),
    Target(
        "blktrace",
        _f("syn.blktrace.0", "bfq.blktrace.0", "loop.blktrace.1", "mq30.blktrace.1"),
        _blktrace,
        M.BINARY,
        exhaustive=lambda data: _chain(M.truncations(data), M.record_fields(data)),
        file_name="trace.blktrace.0",
        weight=3,
    ),
    Target(
        "iostat",
        _f("iostat_new_mt.txt", "iostat_old.txt", "iostat_x_no_t.txt", "iostat_dxk.txt"),
        _side_log("iostat"),
        M.TEXT,
        splice_from=_TEXT_SAMPLES,
    ),
    Target(
        "vmstat",
        _f("vmstat_capture.txt", "vmstat_t.txt", "vmstat_a.txt"),
        _side_log("vmstat"),
        M.TEXT,
        splice_from=_TEXT_SAMPLES,
    ),
    Target(
        "meminfo",
        _f("meminfo_capture.txt", "meminfo_snapshots.txt"),
        _side_log("meminfo"),
        M.TEXT,
        splice_from=_TEXT_SAMPLES,
    ),
    Target("writeback", _f("writeback.txt"), _side_log("writeback"), M.TEXT),
    Target("writeback_ns", _f("writeback_ns.txt"), _side_log("writeback_ns"), M.TEXT),
    Target(
        "biosnoop",
        _f("biosnoop_capture.txt", "biosnoop_que.txt", "biosnoop_lost.txt"),
        _side_log("biosnoop"),
        M.TEXT,
        splice_from=_TEXT_SAMPLES,
    ),
    Target("biosnoop_bt", _f("biosnoop_bt.txt"), _side_log("biosnoop_bt"), M.TEXT),
    Target("hist_bcc", _f("bcc_biolatency_DT.txt"), _side_log("hist_bcc"), M.TEXT),
    Target(
        "hist_bpftrace",
        _f("bt_hist.txt", "bt_hist_interval.txt"),
        _side_log("hist_bpftrace"),
        M.TEXT,
    ),
    Target(
        "hist_json",
        _f("bt_hist.json", "bcc_biolatency_j.txt"),
        _side_log("hist_json"),
        [*M.TEXT, *M.JSON],
    ),
    Target("series_csv", _f("prober.csv"), _side_log("series_csv"), M.TEXT),
    Target(
        "partitions",
        tuple(sorted((ROOT / "tests" / "data" / "partitions").glob("*_*.*"))),
        _partitions,
        [*M.TEXT, *M.JSON],
    ),
    Target(
        "file maps",
        tuple(sorted((ROOT / "tests" / "data" / "files" / "maps-small").glob("*.txt"))),
        _file_map,
        M.TEXT,
    ),
    Target("clock.txt", (CAPTURE / "clock.txt",), _clock, M.TEXT, weight=0.3),
    Target(
        "capture.json",
        (CAPTURE / "capture.json", ROOT / "tests" / "data" / "issue5" / "wb500-a" / "capture.json"),
        _capture_json,
        M.JSON,
        weight=0.5,
    ),
    Target(
        "manifest.json",
        (),
        _manifest,
        M.JSON,
        exhaustive=lambda data: iter(()),
        weight=0.5,
        build=_build_manifest,
    ),
    _built("capture folder", _capture_folder, _build_capture, weight=0.3),
    _built("duplicated streams", _duplicated, _build_duplicated, weight=0.5),
    _built("damaged analysis", _analysis, _build_damaged_trace, weight=0.05),
]


def _chain(*parts: Iterator[bytes]) -> Iterator[bytes]:
    for part in parts:
        yield from part


BY_NAME = {t.name: t for t in TARGETS}
