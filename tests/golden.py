"""Golden files: what a test compares against, rewritten from the actual value when
BLKSCOPE_UPDATE_GOLDEN=1 (only for an intended change; say why in the commit)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as csv


def updating() -> bool:
    """Whether this run rewrites golden files instead of only reading them."""
    return os.environ.get("BLKSCOPE_UPDATE_GOLDEN") == "1"


def golden_text(path: Path, actual: str) -> str:
    """The stored text of path (first rewritten with `actual` when updating)."""
    if updating():
        path.write_text(actual)
    return path.read_text()


def golden_json(path: Path, actual: Any) -> Any:
    """The stored JSON value of path (first rewritten with `actual` when updating)."""
    if updating():
        path.write_text(json.dumps(actual, indent=1) + "\n")
    return json.loads(path.read_text())


def golden_table(path: Path, actual: pa.Table) -> pa.Table:
    """The stored CSV rows of path as a table of actual's schema (first rewritten from actual
    when updating)."""
    if updating():
        csv.write_csv(actual, path)
    return csv.read_csv(path).cast(actual.schema)
