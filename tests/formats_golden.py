"""Golden-file comparison for the format parsers: table rows vs tests/golden/formats/NAME.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa

DATA = Path(__file__).parent / "data" / "formats"
GOLDEN = Path(__file__).parent / "golden" / "formats"
CAPTURES = Path(__file__).parents[1] / ".." / "shared" / "captures"


def assert_golden(name: str, table: pa.Table) -> None:
    """Rows must equal the stored golden JSON; BLKSCOPE_UPDATE_GOLDEN=1 rewrites it."""
    rows = json.loads(json.dumps(table.to_pylist(), default=str))
    path = GOLDEN / f"{name}.json"
    if os.environ.get("BLKSCOPE_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(rows, indent=1) + "\n")
    expected = json.loads(path.read_text())
    assert rows == expected
