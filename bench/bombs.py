#!/usr/bin/env python3
"""Run issue 14's and issue 33's input bombs through blkscope and print each step's time and
peak RSS.

Usage: python bench/bombs.py [--keep DIR] [--only NAME...] [--json]

The bombs are built in a temp folder (about 250 MB of disk, mostly the garbage lines) and
removed afterwards unless --keep names a folder. Nothing is asserted: the figures are for a
person to read (`just bench-bombs`); the suite pins the behaviour (exit codes, messages,
counted lines) on small versions of the same inputs.

Each bomb, and what it did before issue 14's bounds:
  zeros.zst        1 GiB of NUL bytes, zstd (33 KB): 247 s, 2.3 GB
  a-line.zst       1 GiB of 'A' without a newline, zstd: 414 s, 6.5 GB
  blank-lines.zst  one valid line and 1 GiB of blank lines, zstd: 486 s, 4.9 GB
  blank-lines.txt  one valid line and 200 MiB of blank lines, plain
  garbage.txt      5,000,000 lines of printable garbage, plain
  iostat-month/    a real capture (the bundled mq-writeback-30s blkparse + iostat) with one
                   iostat report stamped a month late: 104 s (56 years late: MemoryError)
  writeback-big/   the bundled capture with a 200 MiB writeback log (its real log repeated
                   with shifted times, 4 M rows): side logs were read whole, 1.5 GB at 100 MiB

Issue 33's, each through the steps it was slow or big in (ingest, then analyze, then report):
  vmstat-20000/    the bundled capture's blkparse text and a vmstat.txt of 20,000 rows (vmstat
                   left running past the trace): the clock alignment was quadratic, 2,000 rows
                   11 s, 10,000 rows 191 s
  time-2^32.txt    a small real trace (tests/data/issue5/jbd2-commit) with one completion at
                   4294967296.000000000: analyze ran 233 s and died out of memory in iostat
  devices-3000.txt 3,000 devices of one IO each: the report took ~0.7 s per device
  hot-sector.txt   1,000,000 IOs on one sector (5 M events): analyze peaked at 1.49 GB
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]
MQ30 = ROOT / "fixtures" / "mq-writeback-30s"
GIB = 1 << 30
MIB = 1 << 20


def _first_line() -> bytes:
    """The bundled capture's first blkparse line: the valid line the blank-line bombs start with."""
    with open(MQ30 / "blkparse.txt.zst", "rb") as fh:
        head = zstandard.ZstdDecompressor().stream_reader(fh).read(4096)
    return head.split(b"\n", 1)[0] + b"\n"


VALID_LINE = _first_line()


def _zstd_of(path: Path, piece: bytes, total: int, head: bytes = b"") -> None:
    """Write head + piece repeated to `total` bytes as one zstd stream, a piece at a time."""
    with open(path, "wb") as fh, zstandard.ZstdCompressor(level=3).stream_writer(fh) as z:
        z.write(head)
        for _ in range(total // len(piece)):
            z.write(piece)


def zeros(folder: Path) -> Path:
    out = folder / "zeros.zst"
    _zstd_of(out, bytes(MIB), GIB)
    return out


def a_line(folder: Path) -> Path:
    out = folder / "a-line.zst"
    _zstd_of(out, b"A" * MIB, GIB)
    return out


def blank_lines_zst(folder: Path) -> Path:
    out = folder / "blank-lines.zst"
    _zstd_of(out, b"\n" * MIB, GIB, head=VALID_LINE)
    return out


def blank_lines_txt(folder: Path) -> Path:
    out = folder / "blank-lines.txt"
    with open(out, "wb") as fh:
        fh.write(VALID_LINE)
        for _ in range(200):
            fh.write(b"\n" * MIB)
    return out


def garbage(folder: Path) -> Path:
    """5 M lines of seeded printable garbage, 8-80 characters each."""
    out = folder / "garbage.txt"
    rng = random.Random(14)
    alphabet = bytes(range(33, 127))
    with open(out, "wb") as fh:
        for _ in range(50):
            block = [
                bytes(rng.choices(alphabet, k=rng.randrange(8, 80))) + b"\n" for _ in range(100_000)
            ]
            fh.write(b"".join(block))
    return out


def iostat_month(folder: Path) -> Path:
    """The bundled capture's blkparse text and iostat log, one report stamped a month late."""
    out = folder / "iostat-month"
    out.mkdir()
    shutil.copy(MQ30 / "blkparse.txt.zst", out)
    text = (MQ30 / "iostat.txt").read_text()
    stamp = "11/21/26 23:38:00"
    assert text.count(stamp) == 1, "the bundled iostat.txt changed: pick another report"
    (out / "iostat.txt").write_text(text.replace(stamp, "12/21/26 23:38:00"))
    return out


def writeback_big(folder: Path) -> Path:
    """The bundled capture's blkparse text and a 200 MiB writeback log: its real writeback_ns
    log repeated, each copy shifted past the last (the MONO_NS clock stays monotonic)."""
    out = folder / "writeback-big"
    out.mkdir()
    shutil.copy(MQ30 / "blkparse.txt.zst", out)
    lines = (MQ30 / "writeback_ns.txt").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("MONO_NS"))
    rows = [line.split() for line in lines[at + 1 :] if line[:1].isdigit()]
    span = int(rows[-1][0]) - int(rows[0][0]) + 1_000_000_000
    with (out / "writeback_ns.txt").open("w") as f:
        f.write("\n".join(lines[: at + 1]) + "\n")
        copy = 0
        while f.tell() < 200 * MIB:
            f.write("".join(f"{int(r[0]) + copy * span} {' '.join(r[1:])}\n" for r in rows))
            copy += 1
    return out


def vmstat_long(folder: Path) -> Path:
    """The bundled capture's blkparse text and its vmstat.txt padded to 20,000 samples with its
    last, idle one (vmstat left running after the trace)."""
    out = folder / "vmstat-20000"
    out.mkdir()
    shutil.copy(MQ30 / "blkparse.txt.zst", out)
    lines = (MQ30 / "vmstat.txt").read_text().splitlines()
    lines += [lines[-1]] * (20_000 + 2 - len(lines))
    (out / "vmstat.txt").write_text("\n".join(lines) + "\n")
    return out


def _event(dev: tuple[int, int], cpu: int, seq: int, t_us: int, action: str, sector: int) -> str:
    completion = action == "C"
    return (
        f"{dev[0]:>3},{dev[1]:<3} {cpu:>2} {seq:>8} {t_us // 1_000_000:>5}."
        f"{t_us % 1_000_000:06d}000 {0 if completion else 100:>5}  {action}   W {sector} + 8 "
        f"{'[0]' if completion else '[dd]'}\n"
    )


def _ios(dev: tuple[int, int], seq: int, t_us: int, sector: int) -> list[str]:
    """Q, G, I, D and C of one 4 KiB write (completing 100 us after its Q)."""
    steps = (("Q", 0), ("G", 1), ("I", 2), ("D", 3), ("C", 100))
    return [_event(dev, 0, seq + k, t_us + dt, a, sector) for k, (a, dt) in enumerate(steps)]


def time_2_32(folder: Path) -> Path:
    """tests/data/issue5/jbd2-commit's trace with one C (in its middle) at 4294967296 s."""
    out = folder / "time-2^32.txt"
    with open(ROOT / "tests/data/issue5/jbd2-commit/blkparse.txt.zst", "rb") as fh:
        lines = zstandard.ZstdDecompressor().stream_reader(fh).read().decode().splitlines(True)
    for i in range(len(lines) // 2, len(lines)):
        fields = lines[i].split()
        if len(fields) > 5 and fields[5] == "C":
            lines[i] = lines[i].replace(fields[3], "4294967296.000000000", 1)
            break
    out.write_text("".join(lines))
    return out


def devices_3000(folder: Path) -> Path:
    """3,000 devices (majors 8..19), one 4 KiB write each, 1 ms apart."""
    out = folder / "devices-3000.txt"
    lines = []
    for d in range(3000):
        lines += _ios((8 + d // 256, d % 256), 1, d * 1000, 1000 + 8 * d)
    out.write_text("".join(lines))
    return out


def hot_sector(folder: Path) -> Path:
    """1,000,000 4 KiB writes to sector 1000, one every 200 us (5 M events)."""
    out = folder / "hot-sector.txt"
    with out.open("w") as f:
        for start in range(0, 1_000_000, 10_000):
            f.write("".join(line for i in range(start, start + 10_000)
                            for line in _ios((8, 0), 1 + 5 * i, 200 * i, 1000)))  # fmt: skip
    return out


# name -> (builder, the steps it goes through)
BOMBS: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "zeros.zst": (zeros, ("ingest",)),
    "a-line.zst": (a_line, ("ingest",)),
    "blank-lines.zst": (blank_lines_zst, ("ingest",)),
    "blank-lines.txt": (blank_lines_txt, ("ingest",)),
    "garbage.txt": (garbage, ("ingest",)),
    "iostat-month": (iostat_month, ("ingest",)),
    "writeback-big": (writeback_big, ("ingest",)),
    "vmstat-20000": (vmstat_long, ("ingest",)),
    "time-2^32.txt": (time_2_32, ("ingest", "analyze", "report")),
    "devices-3000.txt": (devices_3000, ("ingest", "analyze", "report")),
    "hot-sector.txt": (hot_sector, ("ingest", "analyze")),
}


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir())
    return path.stat().st_size


def _command(step: str, source: Path, out: Path) -> list[str]:
    if step == "ingest":
        return ["ingest", str(source), "-o", str(out), "-q"]
    if step == "analyze":
        return ["analyze", str(out), "-q"]
    return ["report", str(out), "-o", str(out.with_suffix(".html")), "-q"]


def run_step(step: str, source: Path, out: Path) -> dict[str, object]:
    """`blkscope STEP ...` in a child (ingest SOURCE into OUT, analyze OUT, report on OUT):
    exit code, wall seconds, peak RSS."""
    env = dict(os.environ)  # the blkscope this interpreter imports, as bench.py times
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "blkscope.cli", *_command(step, source, out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit": proc.returncode,
        "seconds": round(seconds, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),  # ru_maxrss is in KiB on Linux
        "said": err.splitlines()[0] if err else "",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="build the bombs here and keep them")
    ap.add_argument("--only", nargs="+", choices=sorted(BOMBS), help="run only these bombs")
    ap.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="blkscope-bombs-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for name in args.only or BOMBS:
            build, steps = BOMBS[name]
            built = time.monotonic()
            bomb = build(folder)
            build_s = time.monotonic() - built
            dataset = folder / f"{name}.dataset"
            for step in steps:
                result = run_step(step, bomb, dataset)
                results.append({"bomb": name, "step": step, "input_bytes": _size(bomb),
                                **result, "build_seconds": round(build_s, 1)})  # fmt: skip
                if not args.json:
                    r = results[-1]
                    print(
                        f"{name:16} {step:8} {r['input_bytes']:>13,} B  exit {r['exit']:>3}  "
                        f"{r['seconds']:>7.2f} s  peak RSS {r['peak_rss_mib']:>7.1f} MiB  "
                        f"{r['said'][:90]}",
                        flush=True,
                    )
                if result["exit"] != 0:
                    break  # nothing for the next step to read
            shutil.rmtree(dataset, ignore_errors=True)
            dataset.with_suffix(".html").unlink(missing_ok=True)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
