"""JSON Schemas of the commands' --json outputs (and `report --json`, the summary), so that a
machine reading them can validate what it gets; tests/test_cli_formats.py holds each command's
real output to its schema."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from blkscope.schemas import EPISODES, PERIODS, SPIKES, WRITEBACK_VERDICT
from blkscope.schemas.json_schema import TRACE_START, document, row_schema

_TRACE_TIMES = ("start_ns", "end_ns", "peak_ns")


def _object(props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def _rows(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


_CHECK = _object(
    {
        "target": {"type": "string", "description": "dataset, capture or trace judged"},
        "device": {"type": "string", "description": "'major,minor'"},
        "metric": {"type": "string", "description": "e.g. d2c.p99, spikes"},
        "threshold": {"type": "string", "description": "the limit as written, with its unit"},
        "limit": {"type": "integer", "description": "the limit: ns for latencies, else a count"},
        "actual": {"type": ["integer", "null"], "description": "null: the dataset cannot tell"},
        "passed": {"type": "boolean"},
    }
)


@functools.cache
def output_schemas() -> dict[str, dict[str, Any]]:
    """Command name -> the JSON Schema of its --json output."""
    summary = json.loads((resources.files("blkscope.reports") / "summary.schema.json").read_text())
    return {
        "report": summary,
        "spikes": document(
            "blkscope spikes --json",
            _object(
                {
                    "trace_start": TRACE_START,
                    "episodes": _rows(row_schema(EPISODES, _TRACE_TIMES)),
                    "spikes": _rows(row_schema(SPIKES, _TRACE_TIMES)),
                    "writeback": _rows(row_schema(WRITEBACK_VERDICT)),
                }
            ),
        ),
        "periods": document("blkscope periods --json", _rows(row_schema(PERIODS, ("phase_ns",)))),
        "check": document(
            "blkscope check --json",
            _object(
                {
                    "passed": {"type": "boolean"},
                    "failed": {"type": "integer"},
                    "checks": _rows(_CHECK),
                }
            ),
        ),
    }
