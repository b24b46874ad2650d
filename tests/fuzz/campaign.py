"""The seeded fuzz campaign: every format's exhaustive variants, then random mutations.

    python -m tests.fuzz.campaign --seed 1 --inputs 1000000 --cli 10000 --workers 2
    python -m tests.fuzz.campaign --seed 1 --replay blktrace:123456   # one input, traceback

Input k of a format is rebuilt from (seed, format, k) alone, so any finding replays exactly.
Each (format, worker) share runs in its own process, so its peak RSS is that format's. The
oracle: reading an input either succeeds or raises a BlkscopeError; anything else escaped.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import random
import resource
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from blkscope.errors import BlkscopeError
from tests.fuzz import mutate as M
from tests.fuzz.targets import BY_NAME, TARGETS, Target

# An input's limits: CPU time is what the input itself costs, whatever else loads the shared
# machine (a 64 MiB decompression took 35 s of CPU and 120 s of wall time at a load of 12);
# the wall-time limit stops one that waits instead of computing.
INPUT_CPU_LIMIT_S = 120
INPUT_WALL_LIMIT_S = 900
SLOW_S = 10.0


class Hang(BaseException):
    """An input ran past INPUT_CPU_LIMIT_S of CPU or INPUT_WALL_LIMIT_S of wall time."""


@dataclass
class Tally:
    """What one format's inputs did."""

    inputs: int = 0
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    escaped: dict[str, dict[str, Any]] = field(default_factory=dict)
    slow: list[tuple[int, float]] = field(default_factory=list)
    max_s: float = 0.0
    seconds: float = 0.0
    peak_rss_mib: float = 0.0

    def merge(self, other: Tally) -> None:
        self.inputs += other.inputs
        self.ok += other.ok
        for k, n in other.errors.items():
            self.errors[k] = self.errors.get(k, 0) + n
        for sig, doc in other.escaped.items():
            mine = self.escaped.setdefault(sig, {**doc, "count": 0})
            mine["count"] += doc["count"]
        self.slow += other.slow
        self.max_s = max(self.max_s, other.max_s)
        self.seconds += other.seconds
        self.peak_rss_mib = max(self.peak_rss_mib, other.peak_rss_mib)

    @property
    def escaped_count(self) -> int:
        return sum(d["count"] for d in self.escaped.values())


def exhaustive_inputs(target: Target) -> Iterator[bytes]:
    """Every variant of every seed that is always tried (truncations, record fields)."""
    for data in target.seed_bytes():
        yield from target.exhaustive(data)


def exhaustive_count(target: Target) -> int:
    return sum(1 for _ in exhaustive_inputs(target))


def input_rng(seed: int, target: Target, k: int) -> random.Random:
    return random.Random(f"{seed}:{target.name}:{k}")


def random_input(target: Target, seed: int, k: int, scratch: Path) -> Path:
    """Build input k of the random phase under scratch and return its path."""
    rng = input_rng(seed, target, k)
    if target.build is not None:
        return target.build(rng, scratch)
    seeds = target.seed_bytes()
    data = M.mutate(rng, rng.choice(seeds), target.table())
    return write_input(scratch, target, data)


def write_input(scratch: Path, target: Target, data: bytes) -> Path:
    folder = scratch / "in"
    folder.mkdir(exist_ok=True)
    path = folder / target.file_name
    path.write_bytes(data)
    return path


def _signature(exc: BaseException) -> str:
    """Type and the innermost blkscope frame: one root cause, one signature."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/blkscope/" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(exc).__name__} at {where}"


def run_input(
    target: Target, path: Path, scratch: Path, rng: random.Random, tally: Tally, k: int
) -> None:
    """Run one input through its entry point and count what happened."""
    tally.inputs += 1
    started = time.perf_counter()
    cpu_handler = signal.signal(signal.SIGPROF, _on_cpu_limit)
    signal.setitimer(signal.ITIMER_PROF, INPUT_CPU_LIMIT_S)
    signal.alarm(INPUT_WALL_LIMIT_S)
    try:
        target.run(path, scratch, rng)
        tally.ok += 1
    except BlkscopeError as exc:
        name = type(exc).__name__
        tally.errors[name] = tally.errors.get(name, 0) + 1
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        sig = _signature(exc)
        doc = tally.escaped.setdefault(
            sig,
            {"count": 0, "example": k, "message": str(exc)[:300], "traceback": ""},
        )
        doc["count"] += 1
        if not doc["traceback"]:
            doc["traceback"] = "".join(traceback.format_exception(exc))[-3000:]
    finally:
        signal.alarm(0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, cpu_handler)
    spent = time.perf_counter() - started
    tally.seconds += spent
    tally.max_s = max(tally.max_s, spent)
    if spent > SLOW_S:
        tally.slow.append((k, round(spent, 1)))


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"input ran longer than {INPUT_WALL_LIMIT_S} s")


def _on_cpu_limit(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"input took more than {INPUT_CPU_LIMIT_S} s of CPU")


def _scratch() -> Path:
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")
    path = base / f"blkscope-fuzz-{os.getpid()}" / "work"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _clean(scratch: Path) -> None:
    for item in scratch.iterdir():
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item, ignore_errors=True)
        else:
            item.unlink(missing_ok=True)


def run_share(args: tuple[str, int, int, int, int, list[int] | None]) -> dict[str, Any]:
    """Worker: inputs start..end-1 of one format (the first n_exh are its exhaustive variants),
    in a fresh process, so that its peak RSS is this format's."""
    name, seed, start, end, n_exh, only = args
    signal.signal(signal.SIGALRM, _on_alarm)
    target = BY_NAME[name]
    scratch = _scratch()
    tally = Tally()
    wanted = set(only) if only is not None else None
    try:
        variants = itertools.islice(exhaustive_inputs(target), start, min(end, n_exh))
        for k, data in enumerate(variants, start=start):
            if wanted is None or k in wanted:
                path = write_input(scratch, target, data)
                run_input(target, path, scratch, input_rng(seed, target, k), tally, k)
                _clean(scratch)
        for k in range(max(start, n_exh), end):
            if wanted is None or k in wanted:
                path = random_input(target, seed, k, scratch)
                run_input(target, path, scratch, input_rng(seed, target, k), tally, k)
                _clean(scratch)
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)
    tally.peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"name": name, "tally": tally.__dict__}


def plan(total: int, targets: list[Target], exhaustive: bool) -> dict[str, tuple[int, int]]:
    """(inputs, of which exhaustive variants) per format: every exhaustive variant, the rest
    of `total` shared by weight."""
    exh = {t.name: exhaustive_count(t) if exhaustive else 0 for t in targets}
    rest = max(0, total - sum(exh.values()))
    weights = sum(t.weight for t in targets)
    return {t.name: (exh[t.name] + round(rest * t.weight / weights), exh[t.name]) for t in targets}


# Inputs per job: results come in (and the --report file is rewritten) as each job ends, and
# every format advances from the start; each job is a fresh process (a few seconds of set-up).
JOB_INPUTS = 1000


def campaign(
    seed: int,
    counts: dict[str, tuple[int, int]],
    workers: int,
    only: dict[str, list[int]] | None = None,
    report: Path | None = None,
) -> dict[str, Tally]:
    """Run the planned inputs on `workers` processes; return a Tally per format."""
    jobs = [
        (name, seed, start, min(n, start + JOB_INPUTS), n_exh, (only or {}).get(name))
        for start in range(0, max(n for n, _ in counts.values()), JOB_INPUTS)
        for name, (n, n_exh) in counts.items()
        if start < n
    ]
    tallies = {name: Tally() for name in counts}
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers, maxtasksperchild=1) as pool:
        for done in pool.imap_unordered(run_share, jobs):
            tallies[done["name"]].merge(Tally(**done["tally"]))
            t = tallies[done["name"]]
            total = sum(x.inputs for x in tallies.values())
            escaped = sum(x.escaped_count for x in tallies.values())
            print(
                f"  {done['name']}: {t.inputs:,} inputs, {t.escaped_count} escaped "
                f"(all formats: {total:,}, {escaped} escaped)",
                file=sys.stderr,
                flush=True,
            )
            if report is not None:
                write_report(report, tallies)
    return tallies


def write_report(path: Path, tallies: dict[str, Tally]) -> None:
    """The tallies as JSON (rewritten as jobs end: a stopped campaign keeps what it did)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({k: {**v.__dict__} for k, v in tallies.items()}, indent=1) + "\n")
    os.replace(tmp, path)


def render(tallies: dict[str, Tally]) -> str:
    """The per-format table of the campaign report."""
    head = f"{'format':<16}{'inputs':>10}{'ok':>9}{'refused':>9}{'escaped':>9}{'max s':>8}{'peak RSS MiB':>14}"
    rows = [head]
    total = Tally()
    for name, t in tallies.items():
        refused = sum(t.errors.values())
        rows.append(
            f"{name:<16}{t.inputs:>10,}{t.ok:>9,}{refused:>9,}{t.escaped_count:>9}"
            f"{t.max_s:>8.1f}{t.peak_rss_mib:>14.0f}"
        )
        total.merge(t)
    rows.append(
        f"{'total':<16}{total.inputs:>10,}{total.ok:>9,}{sum(total.errors.values()):>9,}"
        f"{total.escaped_count:>9}{total.max_s:>8.1f}{total.peak_rss_mib:>14.0f}"
    )
    for name, t in tallies.items():
        for sig, doc in t.escaped.items():
            rows.append(f"ESCAPED {name}: {sig} x{doc['count']} (input {doc['example']})")
            rows.append(f"    {doc['message'][:200]}")
        for k, s in t.slow:
            rows.append(f"SLOW {name}: input {k} took {s} s")
    return "\n".join(rows)


def replay(seed: int, spec: str, exhaustive: bool) -> int:
    """Rebuild one input and run it here, printing its traceback."""
    name, _, k_text = spec.rpartition(":")
    target, k = BY_NAME[name], int(k_text)
    scratch = _scratch()
    try:
        for i, data in enumerate(exhaustive_inputs(target) if exhaustive else ()):
            if i == k:
                path = write_input(scratch, target, data)
                break
        else:
            path = random_input(target, seed, k, scratch)
        print(f"input: {path}", file=sys.stderr)
        target.run(path, scratch, input_rng(seed, target, k))
    except BlkscopeError as exc:
        print(f"refused ({type(exc).__name__}): {exc}")
        return 0
    finally:
        shutil.rmtree(scratch.parent, ignore_errors=True)
    print("read without error")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--inputs", type=int, default=100_000, help="library inputs in all")
    parser.add_argument("--cli", type=int, default=0, help="CLI runs (in-process) in all")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--targets", help="comma-separated formats (default: all)")
    parser.add_argument("--no-exhaustive", action="store_true")
    parser.add_argument("--report", type=Path, help="write the tallies as JSON here")
    parser.add_argument("--replay", help="FORMAT:K: rebuild input K of FORMAT and run it")
    parser.add_argument("--replay-cli", type=int, help="K: rebuild CLI run K and run it")
    args = parser.parse_args(argv)
    if args.replay_cli is not None:
        from tests.fuzz.cli import replay_cli

        return replay_cli(args.seed, args.replay_cli)
    if args.replay:
        return replay(args.seed, args.replay, not args.no_exhaustive)
    targets = [BY_NAME[n] for n in args.targets.split(",")] if args.targets else TARGETS
    started = time.time()
    tallies: dict[str, Tally] = {}
    if args.inputs:
        counts = plan(args.inputs, targets, not args.no_exhaustive)
        print(f"plan: {counts}", file=sys.stderr, flush=True)
        tallies = campaign(args.seed, counts, args.workers, report=args.report)
    if args.cli:
        from tests.fuzz.cli import cli_campaign

        done = dict(tallies)

        def report(cli: dict[str, Tally]) -> None:
            if args.report:
                write_report(args.report, {**done, **cli})

        tallies.update(cli_campaign(args.seed, args.cli, args.workers, report))
    text = render(tallies)
    print(text)
    print(f"seed {args.seed}, {time.time() - started:.0f} s")
    if args.report:
        write_report(args.report, tallies)
    return 1 if any(t.escaped_count for t in tallies.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
