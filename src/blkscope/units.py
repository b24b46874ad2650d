"""Durations as users type them ('5ms', '1.5s', '250us', '100') into integer nanoseconds."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from blkscope.errors import OptionError

_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "": 1}
# ns per unit of a time unit's name (a value with no unit is taken as ns)
NS_PER_UNIT = _UNITS
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


# The longest duration any option takes: times are int64 ns, and 2**62 ns (146 years) leaves room
# for the sums and differences the analysis makes of them.
MAX_DURATION_NS = 1 << 62


def option_duration_ns(
    text: str, option: str, *, default_unit: str = "s", zero_ok: bool = False
) -> int:
    """An option's duration in ns: more than zero (or zero when zero_ok), at most 146 years.

    Every duration option of every command goes through here, so that '0', 'nan', '-1' and
    '1e999' get the same message wherever they are typed.
    """
    try:
        ns = parse_duration_ns(text, default_unit)
    except ValueError:
        raise OptionError(
            option, f"not a duration: {text!r}", hint=f"e.g. {option} 1s, 100ms, 250us"
        ) from None
    if ns > MAX_DURATION_NS:
        raise OptionError(option, f"{text!r} is too long (at most 146 years)")
    if ns == 0 and not zero_ok:
        raise OptionError(
            option, f"must be more than 0, got {text!r}", hint=f"e.g. {option} 1s, 100ms, 250us"
        )
    return ns


def option_number(text: str, option: str, *, at_least: float = 0.0) -> float:
    """An option's plain number: finite and at least `at_least` (nan and inf are refused)."""
    try:
        value = float(text)
    except ValueError:
        raise OptionError(option, f"not a number: {text!r}", hint=f"e.g. {option} 5") from None
    if not math.isfinite(value):
        raise OptionError(option, f"must be a finite number, got {text!r}", hint=f"e.g. {option} 5")
    if value < at_least:
        raise OptionError(option, f"must be at least {at_least:g}, got {text!r}")
    return value


# Nanoseconds per unit: every table holds integer ns; these turn them into what people read.
NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000


def ns_to_ms(ns: Any) -> Any:
    """Milliseconds (a float, or a float array for a numpy array) from nanoseconds."""
    return ns / NS_PER_MS


def ns_to_s(ns: Any) -> Any:
    """Seconds (a float, or a float array for a numpy array) from nanoseconds."""
    return ns / NS_PER_S


def format_ns(ns: float | None, sep: str = "") -> str:
    """A duration in the unit that reads best, 3 significant digits: 850ns, 12.3us, 4.56ms,
    1.23s; `sep` goes between number and unit (' ': 812 ns). '-' for None or NaN."""
    if ns is None or ns != ns:  # NaN is the one value not equal to itself
        return "-"
    for unit, scale in (("s", NS_PER_S), ("ms", NS_PER_MS), ("us", NS_PER_US)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g}{sep}{unit}"
    return f"{ns:.0f}{sep}ns"


def format_ms(ns: float | None, digits: int = 3, sep: str = " ") -> str:
    """Milliseconds with a fixed number of decimals: '27.399 ms'; '-' for None."""
    return "-" if ns is None else f"{ns_to_ms(ns):.{digits}f}{sep}ms"


def format_s(ns: float | None, digits: int = 2, sep: str = " ") -> str:
    """Seconds with a fixed number of decimals: '25.18 s'; '-' for None."""
    return "-" if ns is None else f"{ns_to_s(ns):.{digits}f}{sep}s"


_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(i?)B\s*", re.I)


def option_bytes(text: str, option: str) -> int:
    """An option's size in bytes: a number and a unit, as DuckDB reads them (KB, MB, GB, TB in
    powers of 1000; KiB, MiB, GiB, TiB in powers of 1024), more than 0, at most 1 PiB."""
    m = _SIZE.fullmatch(text)
    if m is None:
        raise OptionError(option, f"not a size: {text!r}", hint=f"e.g. {option} 2GB, 512MiB")
    power = "KMGT".find(m.group(2).upper()) + 1 if m.group(2) else 0
    size = int(Decimal(m.group(1)) * (1024 if m.group(3) else 1000) ** power)
    if size <= 0 or size > 1 << 50:
        raise OptionError(option, f"must be more than 0 B and at most 1 PiB, got {text!r}")
    return size


def format_percent(share: float | None, decimals: int = 1) -> str:
    """A share as a percentage with fixed decimals: '4.3%'; '-' for None (not measurable)."""
    return "-" if share is None else f"{100 * share:.{decimals}f}%"


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


def format_bytes(n: float | None) -> str:
    """A size in the binary unit that reads best, 3 significant digits at most: 512 B, 4 KiB,
    256.7 MiB ('-' for None). Whole numbers print without decimals (8 MiB, not 8.00 MiB)."""
    if n is None or n != n:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            value = n / scale
            text = f"{value:.0f}" if value == int(value) else f"{value:.1f}"
            return f"{text} {unit}"
    return f"{n:.0f} B"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """'1 check', '2 checks', '1,024 hosts': a count and its noun, in agreement."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"
