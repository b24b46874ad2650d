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
