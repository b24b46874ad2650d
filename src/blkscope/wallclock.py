"""Trace times on the wall clock: UTC, and the capture host's time zone when it was recorded.

Every table keeps trace-relative integer ns; this is how they are shown beside them (chart
axes, report tables, JSON outputs), from the dataset manifest's trace zero.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from blkscope.units import NS_PER_S


@dataclass(frozen=True)
class WallClock:
    """Where trace time 0 sits on the wall clock; zero_ns is None when the capture did not say."""

    zero_ns: int | None  # wall-clock ns since the epoch of trace time 0
    date_known: bool  # False: only the time of day is trustworthy
    host_zone: dt.tzinfo | None  # the capture host's zone, when capture.json recorded it
    host_zone_name: str | None

    @classmethod
    def from_manifest(cls, manifest: dict[str, Any]) -> WallClock:
        """The dataset's wall clock: manifest.clock.trace_zero and capture.host.timezone."""
        zero = (manifest.get("clock") or {}).get("trace_zero") or {}
        wall = zero.get("wall_ns")
        tz = ((manifest.get("capture") or {}).get("host") or {}).get("timezone") or {}
        offset = tz.get("utc_offset_s")
        zone = None
        if isinstance(offset, int) and abs(offset) < 86_400:
            zone = dt.timezone(dt.timedelta(seconds=offset), str(tz.get("name") or ""))
        return cls(
            zero_ns=int(wall) if isinstance(wall, int) else None,
            date_known=bool(zero.get("date_known", True)),
            host_zone=zone,
            host_zone_name=(str(tz.get("name")) if tz.get("name") else None) if zone else None,
        )

    @property
    def known(self) -> bool:
        """Whether trace times can be put on the wall clock at all."""
        return self.zero_ns is not None

    def at(self, t_ns: int, zone: dt.tzinfo = dt.timezone.utc) -> dt.datetime | None:
        """The wall-clock time of trace time t_ns in zone (None when unknown)."""
        if self.zero_ns is None:
            return None
        wall = self.zero_ns + int(t_ns)
        return dt.datetime.fromtimestamp(wall // NS_PER_S, zone).replace(
            microsecond=wall % NS_PER_S // 1000
        )

    def iso(self, t_ns: int | None) -> str | None:
        """ISO-8601 UTC with microseconds, e.g. 2026-11-22T17:37:49.326334Z (None when
        unknown); without the date when only the time of day is known."""
        when = None if t_ns is None else self.at(t_ns)
        if when is None:
            return None
        text = when.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
        return text if self.date_known else text[11:]

    def clock_text(self, t_ns: int, digits: int = 0) -> str:
        """'17:37:52 UTC' (and ' = 01:37:52 CST' in the host's zone): for tables and notes."""
        utc = self.at(t_ns)
        if utc is None:
            return "-"
        text = _hms(utc, digits) + " UTC"
        if self.host_zone is not None and self.host_zone.utcoffset(None) != dt.timedelta(0):
            local = utc.astimezone(self.host_zone)
            text += f" = {_hms(local, digits)} {self.zone_label()}"
        return text

    def zone_label(self) -> str:
        """The host zone's name, or its offset as UTC+08:00."""
        if self.host_zone is None:
            return "UTC"
        offset = self.host_zone.utcoffset(None) or dt.timedelta(0)
        minutes = int(offset.total_seconds()) // 60
        sign = "+" if minutes >= 0 else "-"
        numeric = f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
        return f"{self.host_zone_name} ({numeric})" if self.host_zone_name else numeric

    def as_doc(self) -> dict[str, Any]:
        """The trace start for JSON outputs."""
        return {
            "wall_ns": self.zero_ns,
            "utc": self.iso(0),
            "date_known": self.date_known if self.known else None,
            "host_zone": self.zone_label() if self.host_zone is not None else None,
        }


def _hms(when: dt.datetime, digits: int) -> str:
    text = when.strftime("%H:%M:%S")
    if digits:
        text += f"{when.microsecond / 1e6:.{digits}f}"[1:]
    return text


def with_wall_times(row: dict[str, Any], clock: WallClock, fields: tuple[str, ...]) -> dict:
    """row plus '<name>_utc' (ISO-8601) beside each trace-ns field '<name>_ns' it has."""
    out = dict(row)
    for name in fields:
        if name in row:
            out[name.removesuffix("_ns") + "_utc"] = clock.iso(row[name])
    return out
