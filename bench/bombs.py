#!/usr/bin/env python3
"""Run issue 14's input bombs through `blkscope ingest` and print each one's time and peak RSS.

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


BOMBS: dict[str, Callable[[Path], Path]] = {
    "zeros.zst": zeros,
    "a-line.zst": a_line,
    "blank-lines.zst": blank_lines_zst,
    "blank-lines.txt": blank_lines_txt,
    "garbage.txt": garbage,
    "iostat-month": iostat_month,
    "writeback-big": writeback_big,
}


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir())
    return path.stat().st_size


def run_ingest(source: Path, out: Path) -> dict[str, object]:
    """`blkscope ingest SOURCE -o OUT -q` in a child: exit code, wall seconds, peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "blkscope.cli", "ingest", str(source), "-o", str(out), "-q"],
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
            built = time.monotonic()
            bomb = BOMBS[name](folder)
            build_s = time.monotonic() - built
            result = run_ingest(bomb, folder / f"{name}.dataset")
            results.append({"bomb": name, "input_bytes": _size(bomb), **result,
                            "build_seconds": round(build_s, 1)})  # fmt: skip
            if not args.json:
                r = results[-1]
                print(
                    f"{name:16} {r['input_bytes']:>13,} B  exit {r['exit']:>3}  "
                    f"{r['seconds']:>7.2f} s  peak RSS {r['peak_rss_mib']:>7.1f} MiB  "
                    f"{r['said'][:90]}",
                    flush=True,
                )
            shutil.rmtree(folder / f"{name}.dataset", ignore_errors=True)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
