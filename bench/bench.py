#!/usr/bin/env python3
"""`just bench`: blkscope against blkparse -d + btt on a real capture and on a 10x copy of it.

Usage: python bench/bench.py [--input DIR] [--cache DIR] [--copies N] [--rounds N] [--quick] [--json]
       python bench/bench.py bombs [ARGS...]      (the hostile-input bench, bench/bombs.py)
       python bench/bench.py attribution [ARGS...]   (issue 31's cause scorer, bench/attribution/)

DIR is a capture folder with blkparse.txt and the per-CPU binaries NAME.blktrace.N (default
$BLKSCOPE_BENCH_INPUT, else ~/.cache/blkscope-bench/capture; a few million events of fio is a
fair size). Make one with `../shared/capture-tools/capture.sh OUT 30 vda -- ../shared/capture-tools/fio_sched.sh
FILE` (root); never commit it. The N-times copy (copies shifted by a whole number of seconds
longer than the trace, text and binaries) is built once into the cache folder (default
$BLKSCOPE_BENCH_CACHE, else ~/.cache/blkscope-bench) and reused. Each round runs, for 1x then
10x, `blkparse -d`, `btt`, `blkscope ingest` (the text), `blkscope analyze` and the streaming pass
alone (bench/pass_rate.py: its events per second), so the compared programs alternate under the
same machine load; every figure is the median over rounds of wall seconds, CPU seconds (user +
system) and peak RSS of that child process (os.wait4, forked from a bare interpreter: ~10 MB is
the floor of the RSS column). The ratios are printed against btt's wall AND CPU time, so that a
slow btt cannot flatter blkscope. Ingest's speed is also given as millions of lines of blkparse
text per CPU-second, for the whole `blkscope ingest` and for the compiled scanner alone
(bench/scan_text.py; issue 32 asks for 5 or more). Start-up: `blkscope --help` and each
command's `--help`, the median wall and CPU milliseconds of 5 runs (issue 32 asks for 0.3 s or
less); the slowest is printed, every one is in --json.
--quick: the 1x capture only. Run it under `flock /tmp/blkscope-bench.lock` on a shared machine.
It times the blkscope this Python imports: the venv's install (`pip install -e .` of a checkout
for its changes; the compiled core is built by that install), or a copy put first on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

from scaled_capture import (  # noqa: E402  (bench/ is sys.path[0] when run as a script)
    TEXT,
    blkparse_dump_command,
    per_cpu_files,
    scaled_capture,
)

DEFAULT_INPUT = Path("~/.cache/blkscope-bench/capture")
WARM_UP = REPO / "fixtures" / "loop-split-merge-tail"  # writes the modules' bytecode once
STEPS = ("blkparse -d", "btt", "ingest", "analyze", "pass")
# The streaming pass alone, on the dataset analyze has just used: bench/pass_rate.py times only
# the compiled core's calls (its wall and CPU replace the script's; its RSS is the script's).
PASS_RATE = REPO / "bench" / "pass_rate.py"


def _option(argv: list[str], name: str, default: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else default


# Times one command from a bare interpreter (python -S, stdlib only): a child's peak RSS starts
# at its parent's when it execs (Linux keeps the larger high-water mark), so the command is
# forked from this ~10 MB process, not from the bench with numpy and blkscope loaded.
RUNNER = """
import json, os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump([time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
               os.waitstatus_to_exitcode(status)], f)
"""


def run(cmd: list[str], cwd: Path, digits: int = 2) -> dict[str, float]:
    """Run cmd; its wall and CPU seconds (to digits) and peak RSS in MB (its output in
    cwd/.bench-out)."""
    # the child imports the blkscope this interpreter does (PYTHONPATH, if set, puts another
    # copy first): the package lives under src/, so the checkout's root holds none
    env = dict(os.environ)
    report = cwd / ".bench-run.json"
    with (cwd / ".bench-out").open("wb") as out:
        proc = subprocess.run(
            [sys.executable, "-S", "-c", RUNNER, str(report), *cmd],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            check=False,
        )
    wall, cpu, rss_kib, code = json.loads(report.read_text())
    report.unlink()
    if code != 0 or proc.returncode != 0:
        err = proc.stderr.decode(errors="replace")
        raise SystemExit(f"{' '.join(cmd)} failed (exit {code}): {err[-2000:]}")
    return {
        "wall_s": round(wall, digits),
        "cpu_s": round(cpu, digits),
        "rss_mb": round(rss_kib / 1024, 1),
    }


def blkscope(*args: str) -> list[str]:
    return [sys.executable, "-m", "blkscope.cli", *args, "-q"]


def one_round(folder: Path, work: Path) -> dict[str, dict[str, float]]:
    """Time each step once on the capture in folder; scratch output goes to work."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    dataset = work / "ds"
    dump = str(work / "timed.bin")
    # btt reads the dump `blkparse -d` has just written, as analyze reads the dataset ingest has
    # just written: both in the page cache. A dump kept beside the inputs would be cold after
    # the 10x round whenever the page cache cannot hold the 10x inputs, and flatter blkscope.
    commands = {
        "blkparse -d": blkparse_dump_command(folder, dump),
        "btt": ["btt", "-i", dump, "-o", str(work / "btt")],
        "ingest": blkscope("ingest", str(folder / TEXT), "-o", str(dataset)),
        "analyze": blkscope("analyze", str(dataset)),
        "pass": [sys.executable, str(PASS_RATE), str(dataset), "--json"],
    }
    out = {}
    for step in STEPS:
        out[step] = run(commands[step], cwd=work)
        if step == "pass":
            rate = json.loads((work / ".bench-out").read_text())
            out[step].update(wall_s=rate["wall_s"], cpu_s=rate["cpu_s"], events=rate["events"])
        print(f"  {folder.name:>18} {step:12} {out[step]}", file=sys.stderr, flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return out


def medians(samples: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {
        step: {
            k: round(statistics.median(s[step][k] for s in samples), 2) for k in samples[0][step]
        }
        for step in STEPS
    }


def ratios(result: dict[str, dict[str, dict[str, float]]], big: str) -> dict[str, float]:
    """The ratios issue 12 names."""

    def r(a: float, b: float) -> float:
        return round(a / b, 2) if b else float("nan")

    # btt and blkparse -d run on one core, so their wall is their CPU time unless they wait for
    # the disk (btt reads the dump blkparse -d wrote: 4.9 GB at 10x); against their CPU time,
    # the waits a small or busy disk adds to theirs do not flatter blkscope.
    out = {}
    for scale, t in result.items():
        out[f"pass M events/s (wall), {scale}"] = r(t["pass"]["events"] / 1e6, t["pass"]["wall_s"])
        out[f"pass M events per CPU-s, {scale}"] = r(t["pass"]["events"] / 1e6, t["pass"]["cpu_s"])
        out[f"analyze / btt wall, {scale}"] = r(t["analyze"]["wall_s"], t["btt"]["wall_s"])
        out[f"analyze wall / btt CPU, {scale}"] = r(t["analyze"]["wall_s"], t["btt"]["cpu_s"])
        out[f"analyze / btt CPU, {scale}"] = r(t["analyze"]["cpu_s"], t["btt"]["cpu_s"])
    if big in result:
        t = result[big]
        out[f"(ingest + analyze) / (blkparse -d + btt) wall, {big}"] = r(
            t["ingest"]["wall_s"] + t["analyze"]["wall_s"],
            t["blkparse -d"]["wall_s"] + t["btt"]["wall_s"],
        )
        out[f"(ingest + analyze) wall / (blkparse -d + btt) CPU, {big}"] = r(
            t["ingest"]["wall_s"] + t["analyze"]["wall_s"],
            t["blkparse -d"]["cpu_s"] + t["btt"]["cpu_s"],
        )
        for step in ("analyze", "ingest"):
            out[f"{step} peak RSS {big} / 1x"] = r(t[step]["rss_mb"], result["1x"][step]["rss_mb"])
    return out


def text_lines(path: Path) -> int:
    """Lines of a text file (blkparse's events and its summary), counted in 16 MiB reads."""
    count = 0
    with path.open("rb") as f:
        while block := f.read(1 << 24):
            count += block.count(b"\n")
    return count


def ingest_speed(
    result: dict[str, dict[str, dict[str, float]]], lines: dict[str, int]
) -> dict[str, float]:
    """Issue 32's ingest speed: millions of lines of blkparse text per CPU-second of ingest."""
    return {
        f"ingest M lines / CPU s, {scale}": round(lines[scale] / 1e6 / t["ingest"]["cpu_s"], 2)
        for scale, t in result.items()
        if t["ingest"]["cpu_s"]
    }


def scan_speed(text: Path, rounds: int) -> float:
    """The compiled scanner alone on the text (bench/scan_text.py): M lines per CPU-second."""
    script = REPO / "bench" / "scan_text.py"
    out = subprocess.run(
        [sys.executable, str(script), str(text), str(rounds)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(json.loads(out.stdout)["m_lines_per_cpu_s"])


def startup(runs: int = 5) -> dict[str, dict[str, float]]:
    """Each command's start-up: `blkscope [CMD] --help`, median wall and CPU ms of runs."""
    from blkscope.cli import COMMANDS, FLEET_COMMANDS

    names = [c.name or c.run.__name__ for c in COMMANDS]
    names += [f"fleet {c.name or c.run.__name__}" for c in FLEET_COMMANDS]
    out = {}
    with tempfile.TemporaryDirectory() as work:
        for name in ["", *names]:
            cmd = [sys.executable, "-m", "blkscope.cli", *name.split(), "--help"]
            times = [run(cmd, cwd=Path(work), digits=4) for _ in range(runs)]
            out[f"blkscope {name} --help".replace("  ", " ")] = {
                f"{k[:-2]}_ms": round(1000 * statistics.median(t[k] for t in times))
                for k in ("wall_s", "cpu_s")
            }
    return out


def print_table(result: dict[str, dict[str, dict[str, float]]], found: dict[str, float]) -> None:
    print(f"{'':8} {'step':12} {'wall s':>9} {'CPU s':>9} {'peak RSS MB':>12}")
    for scale, t in result.items():
        for step, m in t.items():
            print(f"{scale:8} {step:12} {m['wall_s']:9.2f} {m['cpu_s']:9.2f} {m['rss_mb']:12.1f}")
    width = max(map(len, found))
    for name, value in found.items():
        print(f"{name:<{width}}  {value}")


def bombs(argv: list[str]) -> int:
    """The hostile-input bench lives in its own script (bench/bombs.py)."""
    script = REPO / "bench" / "bombs.py"
    if not script.is_file():
        print("bench/bombs.py is not written yet", file=sys.stderr)
        return 2
    return subprocess.call([sys.executable, str(script), *argv])


def attribution(argv: list[str]) -> int:
    """The attribution scorer lives beside its scenario runner (bench/attribution/score.py)."""
    script = REPO / "bench" / "attribution" / "score.py"
    return subprocess.call([sys.executable, str(script), *argv])


def main(argv: list[str]) -> int:
    if argv[:1] == ["bombs"]:
        return bombs(argv[1:])
    if argv[:1] == ["attribution"]:
        return attribution(argv[1:])
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    capture = Path(
        _option(argv, "--input", os.environ.get("BLKSCOPE_BENCH_INPUT", str(DEFAULT_INPUT)))
    ).expanduser()
    cache = Path(
        _option(argv, "--cache", os.environ.get("BLKSCOPE_BENCH_CACHE", "~/.cache/blkscope-bench"))
    ).expanduser()
    copies, rounds = int(_option(argv, "--copies", "10")), int(_option(argv, "--rounds", "1"))
    if not any(capture.glob(f"{TEXT}*")) or not per_cpu_files(capture):
        print(
            f"{capture}: no blkparse.txt and NAME.blktrace.N files to bench on\n{__doc__}",
            file=sys.stderr,
        )
        return 2
    for tool in ("blkparse", "btt"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed (apt-get install blktrace)", file=sys.stderr)
            return 2
    scales = {"1x": 1} if "--quick" in argv else {"1x": 1, f"{copies}x": copies}
    # blkscope as pip installs it, its modules' bytecode compiled once (pip compiles it at
    # install): run from a checkout under PYTHONDONTWRITEBYTECODE, as on the project's machines,
    # every run compiled every module again (75 ms of each analysis). The warm-up writes it.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache / "pycache")
    print(f"building the inputs in {cache} (once)", file=sys.stderr, flush=True)
    folders = {scale: scaled_capture(capture, n, cache) for scale, n in scales.items()}
    warm = cache / "warm-up"
    run(blkscope("ingest", str(WARM_UP), "-o", str(warm / "ds")), cwd=cache)
    run(blkscope("analyze", str(warm / "ds")), cwd=cache)
    shutil.rmtree(warm, ignore_errors=True)
    samples: dict[str, list[dict[str, dict[str, float]]]] = {scale: [] for scale in scales}
    for k in range(rounds):
        print(f"round {k + 1} of {rounds}", file=sys.stderr, flush=True)
        for scale, folder in folders.items():
            samples[scale].append(one_round(folder, cache / "work"))
    result = {scale: medians(s) for scale, s in samples.items()}
    lines = {scale: text_lines(folder / TEXT) for scale, folder in folders.items()}
    found = {**ratios(result, f"{copies}x"), **ingest_speed(result, lines)}
    found["scan alone M lines / CPU s, 1x"] = scan_speed(folders["1x"] / TEXT, max(rounds, 3))
    starts = startup()
    slowest = max(starts, key=lambda name: starts[name]["cpu_ms"])
    found[f"start-up, slowest ({slowest}), wall ms"] = starts[slowest]["wall_ms"]
    found[f"start-up, slowest ({slowest}), CPU ms"] = starts[slowest]["cpu_ms"]
    if "--json" in argv:
        doc = {"input": str(capture), "copies": copies, "rounds": rounds}
        doc = {**doc, "lines": lines, "medians": result, "start-up": starts}
        print(json.dumps({**doc, "ratios": found, "samples": samples}, indent=2))
    else:
        print_table(result, found)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
