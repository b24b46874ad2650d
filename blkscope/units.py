"""Durations as users type them ('5ms', '1.5s', '250us', '100') into integer nanoseconds."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "": 1}
_DURATION = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms|s|)\s*")


def parse_duration_ns(text: str, default_unit: str = "s") -> int:
    """Parse a duration; a bare number is in default_unit. Raises ValueError with the reason."""
    m = _DURATION.fullmatch(text)
    if m is None:
        raise ValueError(f"not a duration: {text!r} (try 5ms, 1.5s, 250us)")
    unit = m.group(2) or default_unit
    try:
        return int(Decimal(m.group(1)) * _UNITS[unit])
    except (InvalidOperation, KeyError):
        raise ValueError(f"not a duration: {text!r} (try 5ms, 1.5s, 250us)") from None


def format_ns(ns: float) -> str:
    """Short human form: 850ns, 12.3us, 4.56ms, 1.23s."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g}{unit}"
    return f"{ns:.0f}ns"


def format_share(share: float) -> str:
    """A share as a percentage with the digits it needs: 67%, 2.1%, 0.4%, 0.03%, 0%, 100%.

    Whole percents hide small shares (0.4% is not 0%) and near-total ones (99.6% is not 100%).
    """
    pct = 100 * share
    if pct == 0 or pct == 100:
        return f"{pct:.0f}%"
    if pct < 0.1:
        return f"{pct:.1g}%"
    if pct < 10 or pct > 99:
        return f"{pct:.1f}%"
    return f"{pct:.0f}%"
