"""Fuzzed command lines: every analysis command with hostile paths and option values.

Run k is rebuilt from (seed, k) alone. Each runs in-process through Typer's CliRunner; one in
SUBPROCESS_EVERY also runs as a real `python -m blkscope.cli` (stdout and stderr encoded as a
terminal would, the interpreter's own exit). The oracle:
- no exception but SystemExit (a traceback is an escape),
- an exit code from the README: 0 ok, 1 other failure, 2 bad usage or input, 130 interrupted,
- a failure says so: `error: WHAT` (a ParseError's WHAT is `file:line: what is wrong`), then
  optionally `hint: ...`; or click's usage error; `check` exits 1 with its table when a
  threshold is exceeded.
`capture` and `capture-restore` are left out: they change the live tracefs, which the machine
shares (tests/capture/test_capture_*.py hold them under flock).

    python -m tests.fuzz.campaign --seed 1 --inputs 0 --cli 10000 --workers 2
    python -m tests.fuzz.campaign --seed 1 --replay-cli 1234    # one run, its output
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from blkscope.cli import app
from tests.fuzz import mutate as M
from tests.fuzz.campaign import Hang, Tally, _on_alarm, _scratch, _signature
from tests.fuzz.targets import (
    CAPTURE,
    FORMATS,
    ROOT,
    _build_manifest,
    base_dataset,
    copy_dataset,
)

SUBPROCESS_EVERY = 100
RUN_TIME_LIMIT_S = 300
EXIT_CODES = {0, 1, 2, 130}

NUMBERS = ["nan", "inf", "-inf", "0", "-0", "-1", "0.5", "1", "1e308", "1e-320", "", "abc",
           "99999999999999999999", "9" * 5000, "\uff11", "0x10", " 1", "1_000"]  # fmt: skip
DURATIONS = ["1s", "100ms", "0s", "0", "-1s", "nan", "infs", "1e400s", "", "ms", "1 s", "5m",
             "1us", "10ns", "99999999999999999999h", "nans", "-0ms", "1\udcffs"]  # fmt: skip
MAXES = ["d2c.p99=5ms", "q2c.p50=1s", "spikes=0", "spikes=-1", "q2c.p99=nan", "bogus=1",
         "d2c.p99=", "=", "d2c.p99", "d2c.p99=1e999ms", "spikes=99999999999999999999",
         "d2c.p99=\udcff"]  # fmt: skip
OFFSETS = ["iostat=+1", "iostat=-0.5", "iostat=nan", "iostat=inf", "x=1", "=", "iostat",
           "iostat=+1e30", "vmstat=-99999999999", "iostat=1\udcff"]  # fmt: skip
STARTS = ["2026-01-01T00:00:00", "0001-01-01", "9999-12-31T23:59:59", "nan", "",
          "2026-13-45", "2026-01-01T00:00:00+25:00", "1970-01-01", "2026-01-01T00:00:00Z"]  # fmt: skip
QUERIES = ["select count(*) from requests", "select * from events limit 3", "select 1/0",
           "select 'nan'::double AS x, ['inf'::double] AS y", "-- a comment\nselect 1",
           "select count(*) from events a, events b, events c", "select * from range(100000000)",
           "", ";", "select", "select '\udcff'", "show tables", "select * from nosuch",
           "select * from read_csv('/etc/passwd')", "COPY (select 1) TO '{scratch}/x.csv'",
           "ATTACH '{scratch}/x.db'", "select * from bios; select 2",
           "select repeat('a', 1000)"]  # fmt: skip
PARTITIONS = sorted((ROOT / "tests" / "data" / "partitions").glob("*_*.*"))


class World:
    """The files one worker's runs draw from, made once under its scratch folder."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.base = base_dataset(scratch)
        # Copies, never the repository's files: a command writes beside its input (a report's
        # dataset and summary) or, told so, over it.
        self.trace = scratch / "syn.blkparse.txt"
        shutil.copyfile(FORMATS / "syn.blkparse.txt", self.trace)
        self.capture = scratch / CAPTURE.name
        shutil.copytree(CAPTURE, self.capture, dirs_exist_ok=True)

    def dataset(self, rng: random.Random, work: Path) -> str:
        pick = rng.random()
        if pick < 0.55:
            return str(copy_dataset(self.base, work / f"ds{rng.randrange(1 << 30)}"))
        if pick < 0.65:  # a damaged manifest (each in its own folder: compare takes two)
            folder = work / f"damaged{rng.randrange(1 << 30)}"
            folder.mkdir()
            return str(_build_manifest(rng, folder))
        return self.path(rng, work)

    def path(self, rng: random.Random, work: Path) -> str:
        """A hostile path: missing, a file for a folder, non-UTF-8, empty, too long..."""
        how = rng.randrange(12)
        if how == 0:
            return str(work / "missing")
        if how == 1:
            return str(self.trace)  # a file where a folder is expected
        if how == 2:
            (work / "empty").mkdir(exist_ok=True)
            return str(work / "empty")
        if how == 3:
            return os.fsdecode(os.fsencode(str(work)) + b"/caf\xe9\xff")  # not UTF-8
        if how == 4:
            return ""
        if how == 5:
            return "-"
        if how == 6:
            return str(self.capture)  # a capture folder, not a dataset
        if how == 7:
            return str(work / ("x" * 300))  # a name too long for the file system
        if how == 8:
            return "/dev/null"
        if how == 9:
            return str(work)  # a folder that is not a dataset, holding the other inputs
        if how == 10:
            return str(Path(self.trace) / "under-a-file")
        return self.mutated_input(rng, work)

    def mutated_input(self, rng: random.Random, work: Path) -> str:
        data = M.mutate(rng, self.trace.read_bytes(), M.TEXT)
        name = rng.choice([b"in.txt", b"in\xff.txt", b"in.txt.zst", b"in.txt.gz"])
        path = os.fsencode(str(work)) + b"/" + name
        Path(os.fsdecode(path)).write_bytes(data)
        return os.fsdecode(path)

    def input(self, rng: random.Random, work: Path) -> str:
        pick = rng.random()
        if pick < 0.3:
            return str(self.trace)
        if pick < 0.4:
            return str(self.capture)
        if pick < 0.6:
            return self.mutated_input(rng, work)
        return self.path(rng, work)

    def output(self, rng: random.Random, work: Path, suffix: str = "") -> str:
        pick = rng.random()
        if pick < 0.5:
            return str(work / f"out{suffix}")
        if pick < 0.6:
            return str(copy_dataset(self.base, work / "existing"))  # replaced
        return self.path(rng, work)


def _opt(rng: random.Random, args: list[str], name: str, values: list[str], p: float = 0.5) -> None:
    if rng.random() < p:
        args += [name, rng.choice(values)]


def _flags(rng: random.Random, args: list[str], *names: str) -> None:
    for name in names:
        if rng.random() < 0.3:
            args.append(name)


def command_line(rng: random.Random, world: World, work: Path) -> tuple[list[str], bytes]:
    """One fuzzed command line (and what goes to its stdin)."""
    cmd = rng.choices(_COMMANDS, weights=[w for _, w, _ in _COMMAND_TABLE])[0]
    args: list[str] = [cmd]
    _BUILDERS[cmd](rng, world, work, args)
    if rng.random() < 0.05:
        args.insert(rng.randrange(1, len(args) + 1), rng.choice(["--bogus", "-x", "--", "--json="]))
    if rng.random() < 0.05 and len(args) > 1:
        del args[rng.randrange(1, len(args))]  # a missing argument or option value
    stdin = M.mutate(rng, world.trace.read_bytes(), M.TEXT) if "-" in args else b""
    return args, stdin


def _ingest(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    args += [w.input(rng, work) for _ in range(rng.choice([1, 1, 1, 2]))]
    args += ["-o", w.output(rng, work)]
    _flags(rng, args, "--strict", "-q", "--json")
    _opt(rng, args, "--trace-start", STARTS, 0.2)
    _opt(rng, args, "--offset", OFFSETS, 0.2)


def _analyze(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    args.append(w.dataset(rng, work))
    _flags(rng, args, "--json", "-q")
    _opt(rng, args, "--interval", NUMBERS, 0.6)


def _sql(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    args += [w.dataset(rng, work), rng.choice(QUERIES).format(scratch=work)]
    _flags(rng, args, "--json", "--csv")


def _plain(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    args.append(w.dataset(rng, work))
    _flags(rng, args, "--json")


def _spikes(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    _plain(rng, w, work, args)
    _opt(rng, args, "--window", DURATIONS)
    _opt(rng, args, "--metric", ["q2c", "d2c", "x", "", "Q2C"], 0.3)
    _opt(rng, args, "--k", NUMBERS)
    _opt(rng, args, "--threshold", DURATIONS, 0.3)


def _compare(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    args += [w.dataset(rng, work), w.dataset(rng, work)]
    _flags(rng, args, "--json")


def _partitions(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    args.append(w.dataset(rng, work))
    for _ in range(rng.choice([1, 1, 2])):
        if rng.random() < 0.6:
            args.append(str(rng.choice(PARTITIONS)))
        else:
            listing = rng.choice(PARTITIONS)
            mutated = work / f"listing{rng.randrange(1000)}{listing.suffix}"
            mutated.write_bytes(M.mutate(rng, listing.read_bytes(), [*M.TEXT, *M.JSON]))
            args.append(str(mutated) if rng.random() < 0.8 else w.path(rng, work))
    _opt(rng, args, "--device", ["8,0", "7,0", "x", "-1,-1", "99999999999,1", "", "8,"], 0.4)
    _flags(rng, args, "--json")


def _report(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    pick = rng.random()
    args.append(w.dataset(rng, work) if pick < 0.5 else w.input(rng, work))
    args += ["-o", w.output(rng, work, ".html")]
    _flags(rng, args, "--no-timestamp", "-q")


def _check(rng: random.Random, w: World, work: Path, args: list[str]) -> None:
    args.append(w.dataset(rng, work) if rng.random() < 0.7 else w.input(rng, work))
    for _ in range(rng.choice([0, 1, 1, 2])):
        args += ["--max", rng.choice(MAXES)]
    _flags(rng, args, "--json")


# command, weight (the heavy ones, a whole analysis each, less often), builder
_COMMAND_TABLE: list[tuple[str, float, Callable[[random.Random, World, Path, list[str]], None]]] = [
    ("ingest", 3, _ingest),
    ("analyze", 0.6, _analyze),
    ("sql", 2, _sql),
    ("crosscheck", 1, _plain),
    ("spikes", 2, _spikes),
    ("periods", 1, _plain),
    ("compare", 0.3, _compare),
    ("partitions", 1.5, _partitions),
    ("report", 0.4, _report),
    ("check", 1.5, _check),
]
_COMMANDS = [name for name, _, _ in _COMMAND_TABLE]
_BUILDERS = {name: build for name, _, build in _COMMAND_TABLE}


def judge(args: list[str], code: int, out: str, err: str) -> str | None:
    """What is wrong with how a run ended, or None."""
    if code not in EXIT_CODES:
        return f"exit code {code}"
    if "Traceback (most recent call last)" in out + err:
        return "traceback printed"
    if code == 0 and {"--json", "--nl"} & set(args) and (problem := _invalid_json(args, out)):
        return problem
    if code in (1, 2):
        lines = err.splitlines()
        said = [line for line in lines if line.startswith("error: ")]
        # click's usage errors (Typer draws them in a box)
        usage = code == 2 and any("Usage:" in line or "─ Error ─" in line for line in lines)
        gate = code == 1 and args[0] == "check" and not said
        if not (said or usage or gate):
            return f"exit {code} without an error line"
        if said and not said[0][len("error: ") :].strip():
            return "empty error message"
    return None


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _invalid_json(args: list[str], out: str) -> str | None:
    """What makes a --json (--nl: each line) output something a JSON reader refuses, or None."""
    docs = out.splitlines() if "--nl" in args else ([out] if out.strip() else [])
    for doc in docs:
        try:
            json.loads(doc, parse_constant=_refuse_constant)
        except ValueError as exc:
            return f"invalid JSON output: {str(exc)[:60]}"
    return None


def _run(args: list[str], stdin: bytes) -> tuple[int, str, str, BaseException | None]:
    result = CliRunner().invoke(app, args, input=stdin, catch_exceptions=True)
    exc = result.exception
    escaped = exc if exc is not None and not isinstance(exc, SystemExit) else None
    return result.exit_code, result.stdout, result.stderr, escaped


def _subprocess(args: list[str], stdin: bytes, work: Path) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    proc = subprocess.run(
        [sys.executable, "-m", "blkscope.cli", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=work,
        timeout=300,
    )
    return (
        proc.returncode,
        proc.stdout.decode(errors="replace"),
        proc.stderr.decode(errors="replace"),
    )


def one_run(seed: int, k: int, world: World, tallies: dict[str, Tally]) -> None:
    """Build run k, run it (and maybe as a subprocess), count what happened."""
    rng = random.Random(f"{seed}:cli:{k}")
    work = world.scratch / "cli"
    work.mkdir()
    cwd = os.getcwd()
    os.chdir(work)  # relative outputs ('-', '') land in the scratch folder
    signal.alarm(RUN_TIME_LIMIT_S)
    try:
        try:
            args, stdin = command_line(rng, world, work)
        except Exception as broken:  # the harness's own failure: counted, the job goes on
            harness = tallies.setdefault("cli harness", Tally())
            _escape(harness, _signature(broken), k, str(broken), traceback.format_exc())
            return
        tally = tallies.setdefault(f"cli {args[0]}", Tally())
        tally.inputs += 1
        started = time.perf_counter()
        code, out, err, exc = _run(args, stdin)
        if exc is not None:
            _escape(tally, _signature(exc), k, str(exc), "".join(traceback.format_exception(exc)))
        elif (problem := judge(args, code, out, err)) is not None:
            _escape(tally, problem, k, f"{args!r}: {err[-300:]}", out[-1000:])
        elif code == 0:
            tally.ok += 1
        else:
            tally.errors[f"exit {code}"] = tally.errors.get(f"exit {code}", 0) + 1
        if k % SUBPROCESS_EVERY == 0:
            real = _subprocess(args, stdin, work)
            problem = judge(args, *real)
            if problem is None and exc is None and real[0] != code:
                problem = f"exit {real[0]} as a process, {code} in-process"
            sub = tallies.setdefault("cli subprocess", Tally())
            sub.inputs += 1
            if problem is not None:
                _escape(sub, problem, k, f"{args!r}: {real[2][-300:]}", "")
            else:
                sub.ok += 1
        spent = time.perf_counter() - started
        tally.seconds += spent
        tally.max_s = max(tally.max_s, spent)
    except Hang:
        _escape(
            tallies.setdefault("cli hang", Tally()), "hang", k, f"past {RUN_TIME_LIMIT_S} s", ""
        )
    finally:
        signal.alarm(0)
        os.chdir(cwd)
        shutil.rmtree(work, ignore_errors=True)


def _escape(tally: Tally, sig: str, k: int, message: str, tb: str) -> None:
    doc = tally.escaped.setdefault(sig, {"count": 0, "example": k, "message": message[:300],
                                         "traceback": tb[-3000:]})  # fmt: skip
    doc["count"] += 1


def run_cli_share(job: tuple[int, int, int]) -> dict[str, Any]:
    """Worker: runs start..end-1, in a fresh process."""
    seed, start, end = job
    signal.signal(signal.SIGALRM, _on_alarm)
    scratch = _scratch()
    world = World(scratch)
    tallies: dict[str, Tally] = {}
    try:
        for k in range(start, end):
            one_run(seed, k, world, tallies)
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for t in tallies.values():
        t.peak_rss_mib = rss
    return {name: t.__dict__ for name, t in tallies.items()}


# Runs per job: the --report file is rewritten as each job ends, so a campaign stopped at a
# deadline (or starved on a busy machine) has lost at most a job's worth.
JOB_RUNS = 200


def cli_campaign(
    seed: int, n: int, workers: int, report: Callable[[dict[str, Tally]], None] | None = None
) -> dict[str, Tally]:
    """n fuzzed command lines on `workers` processes; a Tally per command."""
    tallies: dict[str, Tally] = {}
    ctx = multiprocessing.get_context("fork")
    jobs = [(seed, start, min(n, start + JOB_RUNS)) for start in range(0, n, JOB_RUNS)]
    with ctx.Pool(workers, maxtasksperchild=1) as pool:
        for done in pool.imap_unordered(run_cli_share, jobs):
            for name, doc in done.items():
                tallies.setdefault(name, Tally()).merge(Tally(**doc))
            runs = sum(t.inputs for name, t in tallies.items() if name != "cli subprocess")
            escaped = sum(t.escaped_count for t in tallies.values())
            print(f"  cli: {runs:,} runs, {escaped} escaped", file=sys.stderr, flush=True)
            if report is not None:
                report(tallies)
    return dict(sorted(tallies.items()))


def replay_cli(seed: int, k: int) -> int:
    """Rebuild run k and show its command line, exit code and output."""
    scratch = _scratch()
    try:
        world = World(scratch)
        rng = random.Random(f"{seed}:cli:{k}")
        work = scratch / "cli"
        work.mkdir()
        args, stdin = command_line(rng, world, work)
        print(f"args: {args!r}", file=sys.stderr)
        result = CliRunner().invoke(app, args, input=stdin, catch_exceptions=False)
        print(f"exit {result.exit_code}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)
    return 0
