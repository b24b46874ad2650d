"""Read `iostat -xmt 1` output: one dict per report for one device, columns by header name."""

from __future__ import annotations

import re
from pathlib import Path

_STAMP = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d")


def read_iostat(path: Path, device: str) -> list[dict[str, float]]:
    """Reports in order (the first is iostat's since-boot average); header names as keys."""
    reports: list[dict[str, float]] = []
    header: list[str] = []
    for line in path.read_text().splitlines():
        toks = line.split()
        if not toks:
            continue
        if toks[0] == "Device" or toks[0] == "Device:":
            header = toks[1:]
        elif toks[0] == device and header:
            reports.append(dict(zip(header, map(float, toks[1:]), strict=True)))
        elif _STAMP.match(line):
            header = []
    return reports
