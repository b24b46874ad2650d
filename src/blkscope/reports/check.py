"""`blkscope check`: the CI gate. Compare a dataset's headline numbers with --max thresholds."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from blkscope.dataset import Dataset
from blkscope.errors import InputFormatError, OptionError, does_not_exist
from blkscope.pipeline import capture_trace, ensure_analyzed, ingested
from blkscope.reports.summary_json import PERCENTILES
from blkscope.safe_text import printable
from blkscope.store.manifest import is_dataset
from blkscope.units import option_duration_ns, plural

LATENCY_METRICS = [f"{stage}.{p}" for stage in ("d2c", "q2c") for p in PERCENTILES]
COUNT_METRICS = ["spikes", "periods", "requeues", "errors"]
METRICS = LATENCY_METRICS + COUNT_METRICS
UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_THRESHOLD = re.compile(r"^\s*([a-z0-9.]+)\s*=\s*([0-9]+(?:\.[0-9]*)?)\s*([a-z]*)\s*$")


@dataclass(frozen=True)
class Threshold:
    """metric <= limit; limit in ns for latencies, a count otherwise."""

    metric: str
    limit: int
    text: str  # as the user wrote the value


@dataclass(frozen=True)
class Result:
    """One threshold judged on one device of one dataset."""

    target: str
    device: str  # its name (vda) when the dataset knows it, else dev
    dev: str  # major,minor
    metric: str
    threshold: str
    limit: int
    actual: int | None  # None: the dataset cannot tell (spikes not computed)
    passed: bool


def parse_threshold(spec: str) -> Threshold:
    """'d2c.p99=5ms' -> Threshold('d2c.p99', 5_000_000, '5ms')."""
    m = _THRESHOLD.match(spec.lower())
    if not m:
        raise OptionError(
            "--max",
            f"cannot read {spec!r}",
            hint="write METRIC=VALUE, e.g. d2c.p99=5ms or spikes=0",
        )
    metric, number, unit = m.groups()
    if metric not in METRICS:
        raise OptionError(
            "--max", f"unknown metric {metric!r}", hint=f"metrics: {', '.join(METRICS)}"
        )
    if metric in COUNT_METRICS:
        if unit or "." in number:
            raise OptionError(
                "--max", f"{metric} is a count: got {spec!r}", hint=f"e.g. {metric}=0"
            )
        if len(number) > 18:  # past int64: no count is that large
            raise OptionError("--max", f"{metric} of {number[:24]} is out of range")
        return Threshold(metric, int(number), number)
    if unit not in UNITS_NS and unit != "":
        raise OptionError(
            "--max", f"unknown unit {unit!r} in {spec!r}", hint="units: ns, us, ms, s"
        )
    if not unit and number.strip("0.") != "":
        # a bare latency is ambiguous (durations default to seconds, latencies read as ms):
        # refused rather than guessed; 0 needs no unit
        raise OptionError(
            "--max",
            f"{metric}={number} needs a unit: ns, us, ms or s",
            hint=f"e.g. {metric}={number}ms",
        )
    limit = option_duration_ns(number.rstrip("."), "--max", default_unit=unit or "s", zero_ok=True)
    return Threshold(metric, limit, f"{number}{unit or 's'}")


def actual_value(device: dict[str, Any], metric: str) -> int | None:
    """A metric's value from a summary.json device entry."""
    if metric in LATENCY_METRICS:
        stage, pct = metric.split(".")
        value = device[stage][f"{pct}_ns"]
        return None if value is None else int(value)
    if metric == "periods":
        return len(device["periods"])
    value = device[metric]
    return None if value is None else int(value)


def judge(target: str, summary: dict[str, Any], thresholds: list[Threshold]) -> list[Result]:
    """Every threshold on every device of one summary."""
    out = []
    for dev in summary["devices"]:
        for t in thresholds:
            actual = actual_value(dev, t.metric)
            ok = actual is not None and actual <= t.limit
            shown = dev.get("name") or dev["dev"]
            out.append(Result(target, shown, dev["dev"], t.metric, t.text, t.limit, actual, ok))
    return out


def targets(path: Path) -> list[Path]:
    """The datasets, captures or traces to check: path itself, or each one inside a folder."""
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except OSError as exc:  # a name too long, a loop of links
        raise InputFormatError(str(path), f"cannot open: {exc.strerror}") from None
    if not exists:
        raise does_not_exist(str(path))
    if not is_dir or is_dataset(path) or capture_trace(path):
        return [path]  # a file (or a device, /dev/null): read as a trace, which says what is wrong
    found = sorted(p for p in path.iterdir() if p.is_dir() and (is_dataset(p) or capture_trace(p)))
    if not found:
        raise InputFormatError(
            str(path),
            "holds no dataset (manifest.json) and no capture (blkparse.txt[.zst])",
            hint="pass a dataset, a capture, or a folder of them",
        )
    return found


@contextmanager
def _dataset_for(target: Path) -> Iterator[Dataset]:
    """A dataset for target; captures and traces go through a throw-away ingest."""
    with ExitStack() as stack:
        if is_dataset(target):
            yield Dataset(target)
            return
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="blkscope-check-")))
        dataset, _ = ingested(target, tmp / "dataset")
        yield dataset


def check(path: Path, thresholds: list[Threshold]) -> list[Result]:
    """Judge every target under path; a dataset lacking analysis tables gets analysed first."""
    listed = targets(path)  # a missing path fails here, before the report's model is imported
    from blkscope.reports.model import load_report
    from blkscope.reports.summary_json import build_summary

    results: list[Result] = []
    for target in listed:
        with _dataset_for(target) as found, ensure_analyzed(found)[0] as dataset:
            results += judge(str(target), build_summary(load_report(dataset)), thresholds)
    return results


def _shown(metric: str, value: int | None) -> str:
    if value is None:
        return "not computed"
    if metric in COUNT_METRICS:
        return str(value)
    for unit in ("s", "ms", "us"):
        if value >= UNITS_NS[unit]:
            return f"{value / UNITS_NS[unit]:.3f} {unit}"
    return f"{value} ns"


def render_results(results: list[Result]) -> str:
    """A fixed-width table: target / device / metric / threshold / actual / PASS|FAIL."""
    header = ["target", "device", "metric", "threshold", "actual", "result"]
    rows = [
        [printable(r.target), printable(r.device), r.metric, f"<= {r.threshold}",
         _shown(r.metric, r.actual),
         "PASS" if r.passed else "FAIL"]
        for r in results
    ]  # fmt: skip
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, *rows]]  # fmt: skip
    failed = sum(not r.passed for r in results)
    n = len(results)
    verdict = f"FAIL: {failed} of {plural(n, 'check')} failed" if failed else (
        f"PASS: {'1 check' if n == 1 else f'all {n:,} checks'} passed"
    )  # fmt: skip
    return "\n".join([*lines, verdict])


def results_json(results: list[Result]) -> dict[str, Any]:
    """{passed, failed, checks: [...]} for --json."""
    return {
        "passed": all(r.passed for r in results),
        "failed": sum(not r.passed for r in results),
        "checks": [asdict(r) for r in results],
    }
