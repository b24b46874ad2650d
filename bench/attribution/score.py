#!/usr/bin/env python3
"""`just bench-attribution`: does blkscope name the cause that was injected?

Usage: python bench/attribution/score.py [--root DIR] [--only NAME,...] [--rebuild]
           [--reuse-analysis] [--report] [--slack S] [--blkscope PATH] [--json]

For each run under ROOT (default: where.py's, $BLKSCOPE_ATTRIBUTION_ROOT; made by run.py), as
a new user would: `blkscope ingest RUN/capture -o RUN/analysis/dataset`, then
`blkscope spikes RUN/analysis/dataset --json` (with --report, `blkscope report` instead of
ingest, which also writes the page). Each episode is put on CLOCK_MONOTONIC (trace ns + the
trace's first record's time, read from the per-CPU binaries here and checked against the
dataset's manifest) and compared with the run's injections.csv:

- an episode overlapping an injection ([start, end + slack]; latency is counted when an IO
  completes, so IO queued during an injection can complete just after it) is RIGHT when its
  primary (first) named cause is one of the causes injected in that window and every other
  cause it names is injected there too or supported by the kernel's own record
  (kernel_truth.txt: the flusher wrote pages on the device, or jbd2 logged a real commit) or
  by the injection's own log (a scheduler injection's competitor supports competing_io);
- an episode overlapping none is QUIET: fine when `unexplained` or when every cause it names
  is supported that way; else a false cause;
- an injection no episode overlaps is MISSED.
Today's causes are read as the closed set's (`jbd2` is `journal`); several causes are joined
by `+`, strongest first. --rebuild makes every capture again (run.py --force, root);
--reuse-analysis keeps RUN/analysis from the last scoring (only the scoring rules run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from causes import CAUSES  # noqa: E402
from truth import (  # noqa: E402
    injections,
    kernel_truth,
    lower_device_slow,
    sidelog_writeback,
    trace_zero_ns,
)
from where import CAPTURES  # noqa: E402

DEFAULT_ROOT = CAPTURES
ALIASES = {"jbd2": "journal"}  # today's names -> the closed set's
COLUMNS = (*CAUSES, "unexplained")
# An injection that logs more than its cause: the scheduler injection runs a competitor whose
# IO is in flight all along (logged in its detail), so naming competing_io second is not wrong.
ALSO_SUPPORTS = {"scheduler": {"competing_io"}}


def parse_cause(text: str) -> list[str]:
    return [ALIASES.get(p.strip(), p.strip()) for p in text.split("+") if p.strip()]


@dataclass
class Judged:
    run: str
    episode_id: int
    start_s: float  # trace seconds, as blkscope prints them
    end_s: float
    start_mono_ns: int
    end_mono_ns: int
    cause: str  # as blkscope named it
    named: list[str]
    injected: list[str]  # causes of the overlapping injections, sorted; [] when quiet
    supported: list[str]  # named causes the kernel's record supports in the window
    verdict: str  # right, wrong_primary, unsupported_extra, unexplained | fine, false_cause
    reason: str
    processes: str
    injection_details: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    run: str
    trace_zero_ns: int
    episodes: list[Judged]
    injections: list[dict]
    problems: list[str]


def default_blkscope() -> str:
    beside = Path(sys.executable).with_name("blkscope")
    return str(beside) if beside.exists() else "blkscope"


def analyze(run_dir: Path, blkscope: str, reuse: bool, report: bool) -> dict:
    """spikes --json of the run's capture, made as a new user would."""
    out = run_dir / "analysis"
    spikes = out / "spikes.json"
    if reuse and spikes.exists():
        return json.loads(spikes.read_text())
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    dataset = out / "dataset"
    if report:
        cmd = [blkscope, "report", str(run_dir / "capture"), "-o", str(out / "report.html")]
        dataset = out / "report.dataset"
    else:
        cmd = [blkscope, "ingest", "-q", str(run_dir / "capture"), "-o", str(dataset)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    done = subprocess.run([blkscope, "spikes", str(dataset), "--json"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    (out / "dataset_path").write_text(str(dataset))
    spikes.write_text(done.stdout)
    return json.loads(done.stdout)


def manifest_zero(run_dir: Path) -> int | None:
    path_file = run_dir / "analysis" / "dataset_path"
    if not path_file.exists():
        return None
    manifest = json.loads((Path(path_file.read_text()) / "manifest.json").read_text())
    return manifest["clock"]["trace_zero"].get("monotonic_ns")


def _overlaps(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < b1 and b0 < a1


def judge_run(run_dir: Path, doc: dict, slack_ns: int) -> RunResult:
    problems: list[str] = []
    zero = trace_zero_ns(run_dir / "capture")
    said = manifest_zero(run_dir)
    if said is not None and said != zero:
        problems.append(f"dataset says trace zero {said}, the binaries {zero}: binaries used")
    inj = injections(run_dir)
    kernel = kernel_truth(run_dir)
    if kernel is None:
        problems.append("no kernel_truth.txt: writeback support read from sidelog.csv")
        kernel = sidelog_writeback(run_dir)
    kernel = kernel + lower_device_slow(run_dir)
    found = [False] * len(inj)
    judged = []
    for ep in doc["episodes"]:
        s, e = zero + ep["start_ns"], zero + ep["end_ns"]
        hits = [i for i, x in enumerate(inj) if _overlaps(s, e, x.start_ns, x.end_ns + slack_ns)]
        for i in hits:
            found[i] = True
        injected = sorted({inj[i].cause for i in hits})
        named = parse_cause(ep["cause"])
        supported = sorted(
            {k.what for k in kernel if _overlaps(s, e, k.start_ns, k.end_ns)}
            | {c for i in hits for c in ALSO_SUPPORTS.get(inj[i].cause, ())}
        )
        judged.append(Judged(
            run=run_dir.name, episode_id=ep["episode_id"], start_s=ep["start_ns"] / 1e9,
            end_s=ep["end_ns"] / 1e9, start_mono_ns=s, end_mono_ns=e, cause=ep["cause"],
            named=named, injected=injected, supported=[c for c in named if c in supported],
            verdict=verdict(named, injected, supported), reason=ep.get("reason", ""),
            processes=ep.get("processes", ""),
            injection_details=[f"{inj[i].cause}: {inj[i].detail}" for i in hits],
        ))  # fmt: skip
    rows = [
        {**asdict(x), "start_s": (x.start_ns - zero) / 1e9, "end_s": (x.end_ns - zero) / 1e9,
         "found": f}
        for x, f in zip(inj, found, strict=True)
    ]  # fmt: skip
    return RunResult(run_dir.name, zero, judged, rows, problems)


def verdict(named: list[str], injected: list[str], supported: list[str]) -> str:
    primary, extras = named[0] if named else "unexplained", named[1:]
    if injected:
        if primary == "unexplained":
            return "unexplained"
        if primary not in injected:
            return "wrong_primary"
        if any(c not in injected and c not in supported for c in extras):
            return "unsupported_extra"
        return "right"
    if named in ([], ["unexplained"]):
        return "fine"
    if all(c in supported for c in named):
        return "fine"
    return "false_cause"


def summarise(results: list[RunResult]) -> dict:
    episodes = [j for r in results for j in r.episodes]
    overlapping = [j for j in episodes if j.injected]
    quiet = [j for j in episodes if not j.injected]
    confusion: dict[str, Counter] = defaultdict(Counter)
    for j in episodes:
        row = "+".join(j.injected) or "none"
        confusion[row][j.named[0] if j.named else "unexplained"] += 1
    verdicts = Counter(j.verdict for j in episodes)
    inj = [i for r in results for i in r.injections]
    return {
        "captures": len(results),
        "episodes": len(episodes),
        "overlapping": len(overlapping),
        "right": verdicts["right"],
        "unsupported_extra": verdicts["unsupported_extra"],
        "wrong_primary": verdicts["wrong_primary"],
        "unexplained": verdicts["unexplained"],
        "accuracy": verdicts["right"] / len(overlapping) if overlapping else None,
        "quiet": len(quiet),
        "false_cause": verdicts["false_cause"],
        "false_cause_rate": verdicts["false_cause"] / len(quiet) if quiet else None,
        "injections": len(inj),
        "injections_found": sum(i["found"] for i in inj),
        "confusion": {row: dict(c) for row, c in sorted(confusion.items())},
    }


def _pct(n: int, d: int) -> str:
    return f"{n} of {d} ({100 * n / d:.0f}%)" if d else f"{n} of 0"


def render(results: list[RunResult], summary: dict, header: str) -> str:
    out = [header, ""]
    cols = [c for c in COLUMNS]
    extra = sorted({c for row in summary["confusion"].values() for c in row} - set(cols))
    cols += extra
    rows = sorted(summary["confusion"], key=lambda r: (r == "none", r))
    width = max([len(r) for r in rows] + [len("injected \\ named")]) + 2
    out.append("confusion matrix (rows: injected cause; columns: primary named cause)")
    out.append("injected \\ named".ljust(width) + "".join(c[:12].rjust(13) for c in cols))
    for r in rows:
        counts = summary["confusion"][r]
        out.append(r.ljust(width) + "".join(str(counts.get(c, "")).rjust(13) for c in cols))
    s = summary
    out += [
        "",
        f"episodes overlapping an injection, right cause and no unsupported extra: "
        f"{_pct(s['right'], s['overlapping'])}",
        f"  right primary but an extra cause no log supports: {s['unsupported_extra']}; "
        f"wrong primary: {s['wrong_primary']}; unexplained: {s['unexplained']}",
        f"quiet episodes naming a cause no log supports (false cause): "
        f"{_pct(s['false_cause'], s['quiet'])}",
        f"injections found by an episode: {_pct(s['injections_found'], s['injections'])}",
    ]
    wrong = [j for r in results for j in r.episodes if j.verdict not in ("right", "fine")]
    if wrong:
        out += ["", "wrong episodes:"]
        for j in wrong:
            out.append(
                f"  {j.run} #{j.episode_id} [{j.start_s:.0f}, {j.end_s:.0f}) s "
                f"(mono {j.start_mono_ns}): named {j.cause}, injected "
                f"{'+'.join(j.injected) or 'none'} -> {j.verdict}"
                f"{'; the kernel supports ' + ','.join(j.supported) if j.supported else ''}"
            )
            for d in j.injection_details:
                out.append(f"      injected {d}")
            out.append(f"      reason: {j.reason}")
            out.append(f"      processes: {j.processes}")
    missed = [(r.run, i) for r in results for i in r.injections if not i["found"]]
    if missed:
        out += ["", "missed injections (no episode overlaps them):"]
        for run, i in missed:
            out.append(f"  {run} [{i['start_s']:.1f}, {i['end_s']:.1f}] s {i['cause']}: "
                       f"{i['detail']}")  # fmt: skip
    problems = [(r.run, p) for r in results for p in r.problems]
    for run, p in problems:
        out.append(f"note: {run}: {p}")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--only", help="comma-separated scenario names (runs NAME-SEED)")
    ap.add_argument("--rebuild", action="store_true", help="make the captures again (root)")
    ap.add_argument("--reuse-analysis", action="store_true")
    ap.add_argument("--report", action="store_true", help="run `blkscope report` as well")
    ap.add_argument("--slack", type=float, default=0.5, help="seconds after an injection")
    ap.add_argument("--blkscope", default=default_blkscope())
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.rebuild:
        cmd = [sys.executable, str(HERE / "run.py"), "--force", "--out", str(args.root),
               "--blkscope", args.blkscope]  # fmt: skip
        if args.only:
            cmd += ["--only", args.only]
        # Its progress goes to stderr: stdout is the score (and stays JSON with --json).
        if subprocess.run(cmd, check=False, stdout=sys.stderr).returncode != 0:
            print("some captures failed; scoring the rest", file=sys.stderr)
    names = set(args.only.split(",")) if args.only else None
    runs = sorted(
        d for d in args.root.iterdir()
        if (d / "injections.csv").exists() and (d / "capture").is_dir()
        and (names is None or d.name.rsplit("-", 1)[0] in names)
    )  # fmt: skip
    if not runs:
        print(f"no runs under {args.root}: make them with bench/attribution/run.py (root)",
              file=sys.stderr)  # fmt: skip
        return 2
    results = []
    for i, run_dir in enumerate(runs, 1):
        print(f"[{i}/{len(runs)}] {run_dir.name}", file=sys.stderr, flush=True)
        try:
            doc = analyze(run_dir, args.blkscope, args.reuse_analysis, args.report)
        except subprocess.CalledProcessError as exc:
            print(f"  blkscope failed on {run_dir.name}: {exc.stderr[-800:]}", file=sys.stderr)
            continue
        results.append(judge_run(run_dir, doc, int(args.slack * 1e9)))
    summary = summarise(results)
    version = subprocess.run([args.blkscope, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()  # fmt: skip
    header = (f"attribution: {len(results)} captures under {args.root}, {version} "
              f"({args.blkscope}), slack {args.slack} s")  # fmt: skip
    if args.json:
        doc = {
            "root": str(args.root),
            "blkscope": version,
            "slack_s": args.slack,
            "summary": summary,
            "runs": [asdict(r) for r in results],
        }
        print(json.dumps(doc, indent=1))
    else:
        print(render(results, summary, header))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
