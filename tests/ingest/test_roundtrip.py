"""Re-rendering each events row in blkparse's format reproduces the input line byte for byte."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import all_blkparse_inputs, input_id, read_zst
from tests.ingest.blkparse_lines import render_table

# device, CPU, sequence, seconds.nanoseconds: how every blkparse default-format event begins
_EVENT_SHAPE = re.compile(rb" *\d+,\d+ +\d+ +\d+ +\d+\.\d{9} ")


def _event_lines(path: Path) -> dict[int, bytes]:
    text = read_zst(path)
    return dict(enumerate(text.split(b"\n"), start=1))


@pytest.mark.slow
@pytest.mark.parametrize("path", all_blkparse_inputs(), ids=input_id)
def test_every_event_line_round_trips(path: Path, ingested: dict[Path, Path]) -> None:
    events = pq.read_table(ingested[path] / "events.parquet")
    lines = _event_lines(path)
    mismatches = []
    for line_no, rendered in zip(events["line_no"].to_pylist(), render_table(events), strict=True):
        original = lines[line_no]
        if rendered.encode("utf-8", "surrogateescape") != original:
            mismatches.append((line_no, original, rendered))
    assert mismatches[:5] == []
    # ...and no event line is missing: as many rows as the input has lines shaped like an
    # event (counted here with a plain pattern, independently of the parser)
    shaped = [n for n, line in lines.items() if _EVENT_SHAPE.match(line)]
    assert events["line_no"].to_pylist() == shaped
