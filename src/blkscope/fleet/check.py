"""`fleet check`: the CI gate of `blkscope check`, judged on every partition's summary.json."""

from __future__ import annotations

import json
from pathlib import Path

from blkscope.errors import DatasetError
from blkscope.fleet.build_partition import SUMMARY_FILE
from blkscope.fleet.fleet_folder import open_fleet, partitions
from blkscope.reports.check import Result, Threshold, judge


def check_fleet(fleet: Path, thresholds: list[Threshold]) -> list[Result]:
    """Every threshold on every device of every capture; targets are `host=H capture=C`."""
    open_fleet(fleet)
    found = partitions(fleet)
    if not found:
        raise DatasetError(
            str(fleet), "holds no capture", hint="add some with 'blkscope fleet add'"
        )
    results: list[Result] = []
    for part in found:
        path = part.path / SUMMARY_FILE
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DatasetError(
                str(path), f"cannot read: {exc}", hint="add the capture again"
            ) from None
        results += judge(f"host={part.host} capture={part.capture}", summary, thresholds)
    return results
