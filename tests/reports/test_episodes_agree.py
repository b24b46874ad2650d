"""One truth everywhere: the page, `spikes` text, --json, --csv, report.summary.json and
Dataset.spikes() say the same cause, reason and numbers for every episode of the bundled
capture (they all read the episodes table; none recomputes it)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

import blkscope
from blkscope.cli import app
from blkscope.reports.make_report import Written
from tests.reports.page_parser import parse


def _spikes(dataset: Path, *flags: str) -> str:
    result = CliRunner().invoke(app, ["spikes", str(dataset), *flags])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _squash(text: str) -> str:
    """Words only: the terminal wraps long reasons, the page splits them into cells."""
    return re.sub(r"\s+", " ", text).strip()


def test_every_output_names_the_same_cause_and_reason(mq_dataset: Path, mq_report: Written) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        frame = ds.spikes().episodes.collect()
    truth = list(
        zip(
            frame["episode_id"],
            frame["cause"],
            frame["reason"],
            frame["peak_latency_ns"],
            strict=True,
        )
    )
    assert [c for _, c, _, _ in truth] == [
        "competing_io", "unexplained", "unexplained", "writeback", "writeback", "writeback"
    ]  # fmt: skip

    as_json = json.loads(_spikes(mq_dataset, "--json"))["episodes"]
    as_csv = list(csv.DictReader(io.StringIO(_spikes(mq_dataset, "--csv"))))
    for (eid, cause, reason, peak), j, c in zip(truth, as_json, as_csv, strict=True):
        assert (j["episode_id"], j["cause"], j["reason"]) == (eid, cause, reason)
        assert (int(c["episode_id"]), c["cause"], c["reason"]) == (eid, cause, reason)
        assert j["peak_latency_ns"] == int(c["peak_latency_ns"]) == peak

    text = _squash(_spikes(mq_dataset))
    page = _squash(" ".join(parse(mq_report.report.read_text()).text))
    for _, _, reason, _ in truth:
        assert _squash(reason) in text
        assert _squash(reason) in page

    (dev,) = mq_report.summary_doc["devices"]
    shares = Counter(c for _, c, _, _ in truth)
    assert dev["cause_shares"] == {k: round(v / len(truth), 4) for k, v in shares.items()}
    worst = max(truth, key=lambda t: t[3])
    assert (dev["worst_episode"]["cause"], dev["worst_episode"]["reason"]) == worst[1:3]
