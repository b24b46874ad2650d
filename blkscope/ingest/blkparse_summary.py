"""Parse blkparse's trailing statistics blocks into rows of `blkparse_summary`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_BLOCK = re.compile(r"(CPU(\d+)|Total) \((.*)\):")
_PROCESS = re.compile(r"(.*) \((\d+)(?:, \.\.\.)?\):")
_PAIR = re.compile(r"\s*([A-Za-z][A-Za-z. ]*?):\s+(.*?)\s*")
_NUMBER = re.compile(r"([\d,]+)([KMGP]?)(?:iB)?")
_THROUGHPUT = re.compile(r"Throughput \(R/W\): ([\d,]+)KiB/s / ([\d,]+)KiB/s")
_EVENTS = re.compile(r"Events \((.*)\): ([\d,]+) entries")
_SKIPS = re.compile(r"Skips: ([\d,]+) forward \(([\d,]+) - +([\d.]+)%\)")
_SCALE = {"": 1, "K": 1000, "M": 1000**2, "G": 1000**3, "P": 1000**4}


def size_cnv(num: int, in_kb: bool) -> str:
    """Format a number the way blkparse's size_cnv() does (without the %8 padding)."""
    suffixes = ["", "K", "M", "G", "P"]
    i = 1 if in_kb else 0
    while num > 1000 * 1000 and i < len(suffixes) - 1:
        i += 1
        num //= 1000
    return f"{num}{suffixes[i]}"


def _fits_int64(value: int) -> int | None:
    """blkparse prints wrapped-around u64 counters (e.g. 18446744073PiB): keep those as null."""
    return value if value < 2**63 else None


def _metric(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


@dataclass
class SummaryParser:
    """Feed lines that are not events; it claims the ones that belong to a summary block."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    device: str | None = None
    block: str | None = None
    cpu: int | None = None
    active: bool = False
    group: int = 0

    def feed(self, line: str, line_no: int) -> bool:
        """Consume one line; return False when it is not part of a summary."""
        text = line.rstrip("\r")
        if not text.strip():
            return self.active
        m = _BLOCK.fullmatch(text)
        if m:
            self._start(m.group(3), m.group(1), int(m.group(2)) if m.group(2) else None)
            return True
        if self.active and self.block is not None and text.startswith(" "):
            return self._stats(text, line_no)
        m = _THROUGHPUT.fullmatch(text)
        if m and self.active:
            self._add("throughput_read_kib_s", m.group(1), line_no, "device")
            self._add("throughput_write_kib_s", m.group(2), line_no, "device")
            return True
        m = _EVENTS.fullmatch(text)
        if m and self.active:
            self._add("events", m.group(2), line_no, "device")
            return True
        m = _SKIPS.fullmatch(text)
        if m and self.active:
            self._add("skips", m.group(1), line_no, "device")
            self._add("skipped_sequences", m.group(2), line_no, "device")
            self.block = None
            self.group += 1  # blkparse closes each device's statistics with its Skips line
            return True
        m = _PROCESS.fullmatch(text)
        if m and self.active:
            self.block, self.cpu = f"process {text[:-1]}", None
            return True
        return False

    def _start(self, device: str, block: str, cpu: int | None) -> None:
        self.device, self.block, self.cpu, self.active = device, block, cpu, True

    def _stats(self, text: str, line_no: int) -> bool:
        parts = [p for p in text.split("\t") if p.strip()]
        parsed = []
        for part in parts:
            m = _PAIR.fullmatch(part)
            if m is None:
                return False
            parsed.append((m.group(1), m.group(2)))
        labels = [label for label, _ in parsed]
        for label, value in parsed:
            name = _metric(label)
            if labels.count(label) > 1:  # "Allocation wait:" twice: read column, then write
                name += "_read" if label == labels[0] and (label, value) == parsed[0] else "_write"
            pieces = [v.strip() for v in value.split(", ")]
            if not all(_NUMBER.fullmatch(p) for p in pieces):
                return False
            self._add(name, pieces[0], line_no, self.block)
            if len(pieces) > 1:
                self._add(name + "_kib", pieces[1], line_no, self.block, in_kib=True)
        return True

    def _add(
        self, metric: str, text: str, line_no: int, block: str | None, in_kib: bool = False
    ) -> None:
        m = _NUMBER.fullmatch(text)
        assert m is not None
        suffix = m.group(2)
        scale = _SCALE[suffix] // (1000 if in_kib and suffix else 1)
        self.rows.append(
            {
                "device": self.device or "",
                "block": block or "device",
                "cpu": self.cpu if block == self.block else None,
                "metric": metric,
                "value": _fits_int64(int(m.group(1).replace(",", "")) * scale),
                "scale": scale,
                "text": text,
                "line_no": line_no,
                "group": self.group,
            }
        )
