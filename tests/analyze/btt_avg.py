"""Read the 'All Devices' block of btt's btt.avg: stage -> (min_s, avg_s, max_s, n)."""

from __future__ import annotations

from pathlib import Path


def read_btt_avg(path: Path) -> dict[str, tuple[float, float, float, int]]:
    """Rows like `D2C  0.000017008  0.000087968  0.026817689  9726`; 'dm' suffixes dropped."""
    out: dict[str, tuple[float, float, float, int]] = {}
    for line in path.read_text().splitlines():
        if line.startswith("=") and out:
            break
        toks = line.split()
        if len(toks) == 5 and toks[0][:3] in {
            "Q2Q",
            "Q2C",
            "Q2G",
            "G2I",
            "Q2M",
            "I2D",
            "M2D",
            "D2C",
        }:
            out[toks[0][:3]] = (float(toks[1]), float(toks[2]), float(toks[3]), int(toks[4]))
    return out
