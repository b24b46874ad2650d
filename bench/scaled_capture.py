"""Make an N-times longer copy of a real capture for `just bench`: N copies of its events one after
the other, each shifted by a whole number of seconds longer than the trace, as blkparse text and
as per-CPU blktrace binaries (what `blkparse -d` reads for btt). Built once into a cache folder
outside the repository and reused while the input is unchanged.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from blkscope.ingest.blktrace.records import RECORD, read_records

TEXT = "blkparse.txt"
BINARY_GLOB = "*.blktrace.*"
# An event line of blkparse's default output: "MAJ,MIN CPU SEQ SECONDS.NANOS PID ACTION ..."
BUILDER = 2
EVENT_TIME = re.compile(rb"^(\s*\d+,\d+\s+\d+\s+\d+\s+)(\d+)\.(\d{9})\s")


def per_cpu_files(folder: Path) -> list[Path]:
    """The per-CPU blktrace files NAME.blktrace.N (or .N.zst) of a capture folder, by CPU number."""
    found = [p for p in folder.glob(BINARY_GLOB) if p.name.removesuffix(".zst")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.removesuffix(".zst").rsplit(".", 1)[1]))


def _inputs(capture: Path) -> list[Path]:
    """The capture's blkparse text (or its .zst) and per-CPU binaries."""
    text = capture / TEXT
    return [text if text.is_file() else capture / f"{TEXT}.zst", *per_cpu_files(capture)]


def _link_or_unpack(src: Path, folder: Path) -> None:
    """src in folder under its name without .zst: a link, or unpacked when compressed (the
    bundled fixtures are)."""
    if src.suffix != ".zst":
        (folder / src.name).symlink_to(src.resolve())
        return
    import zstandard

    with src.open("rb") as f, (folder / src.name.removesuffix(".zst")).open("wb") as out:
        zstandard.ZstdDecompressor().copy_stream(f, out)


def _event_lines(text: Path) -> Iterator[bytes]:
    """The event lines of blkparse text: those before its per-CPU summary."""
    with text.open("rb") as f:
        for line in f:
            if EVENT_TIME.match(line):
                yield line
            elif line.startswith(b"CPU") and b"(" in line:
                return


def trace_span_s(text: Path) -> int:
    """Whole seconds of a shift that keeps copies of the trace in time order: more than its span."""
    last = 0
    for line in _event_lines(text):
        m = EVENT_TIME.match(line)
        assert m is not None
        last = max(last, int(m[2]) * 10**9 + int(m[3]))
    return last // 10**9 + 1


def _shifted_text(src: Path, dst: Path, copies: int, shift_s: int) -> None:
    with dst.open("wb") as out:
        for k in range(copies):
            add = k * shift_s
            for line in _event_lines(src):
                m = EVENT_TIME.match(line)
                assert m is not None
                # blkparse prints the seconds as " %5d": keep that field's width (the spaces
                # before it belong to it), or the lines are not spaced as blkparse spaces them
                head = m[1].rstrip()
                width = m.end(2) - len(head) - 1
                seconds = str(int(m[2]) + add).encode().rjust(width)
                out.write(head + b" " + seconds + line[m.end(2) :])


def _shifted_binary(src: Path, dst: Path, copies: int, shift_ns: int) -> None:
    """Copies of one per-CPU file, each record's time moved by k * shift_ns and its sequence
    number by k * (the file's highest + 1), so every copy reads as later events of the same CPU."""
    records = read_records(str(src))
    buf, offsets, header = records.data, records.offsets, records.records
    count = len(offsets)
    time_at = offsets[:, None] + RECORD.fields["time"][1] + np.arange(8)
    seq_at = offsets[:, None] + RECORD.fields["sequence"][1] + np.arange(4)
    seq_step = int(header["sequence"].max()) + 1 if count else 0
    with dst.open("wb") as out:
        for k in range(copies):
            copy = buf.copy()
            copy[time_at] = (header["time"] + np.uint64(k * shift_ns)).view(np.uint8).reshape(-1, 8)
            seq = (header["sequence"].astype(np.uint64) + k * seq_step) % (1 << 32)
            copy[seq_at] = seq.astype("<u4").view(np.uint8).reshape(-1, 4)
            copy.tofile(out)


def _identity(capture: Path) -> dict[str, list[int]]:
    return {f.name: [f.stat().st_size, f.stat().st_mtime_ns] for f in _inputs(capture)}


def scaled_capture(capture: Path, copies: int, cache: Path) -> Path:
    """A folder holding blkparse.txt, the per-CPU binaries and their blkparse -d dump for
    `copies` copies of capture (copies = 1: links to the capture's own files)."""
    folder = cache / f"{capture.name}-{copies}x"
    stamp = folder / "built.json"
    # BUILDER: bumped when what is built changes (2: the text's seconds keep blkparse's widths)
    want = {
        "builder": BUILDER,
        "input": str(capture.resolve()),
        "copies": copies,
        "files": _identity(capture),
    }
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if copies == 1:
        for f in _inputs(capture):
            _link_or_unpack(f, folder)
    else:
        one = scaled_capture(capture, 1, cache)
        shift_s = trace_span_s(one / TEXT)
        _shifted_text(one / TEXT, folder / TEXT, copies, shift_s)
        for f in per_cpu_files(one):
            _shifted_binary(f, folder / f.name, copies, shift_s * 10**9)
    stamp.write_text(json.dumps(want))
    return folder


def blkparse_dump_command(folder: Path, out: str) -> list[str]:
    """blkparse -d: the per-CPU binaries of folder into one binary that btt reads."""
    name = per_cpu_files(folder)[0].name.rsplit(".blktrace.", 1)[0]
    return ["blkparse", "-q", "-D", str(folder), "-i", name, "-d", out, "-O"]
