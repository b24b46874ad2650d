"""Golden-file comparison for the format parsers: table rows vs tests/golden/formats/NAME.json."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from tests.golden import golden_json

DATA = Path(__file__).parents[1] / "data" / "formats"
GOLDEN = Path(__file__).parents[1] / "golden" / "formats"
CAPTURES = Path(__file__).parents[2] / ".." / "shared" / "captures"


def assert_golden(name: str, table: pa.Table) -> None:
    """Rows must equal the stored golden JSON; BLKSCOPE_UPDATE_GOLDEN=1 rewrites it."""
    rows = json.loads(json.dumps(table.to_pylist(), default=str))
    assert rows == golden_json(GOLDEN / f"{name}.json", rows)
