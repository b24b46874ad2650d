"""Parse blkparse's trailing statistics blocks into rows of `blkparse_summary`.

blkparse prints, after the events: with -s, one block per process (`comm (pid):` or
`comm (pid, ...):`, its counts and its Allocation/Dispatch/Completion wait), then a blank line;
then per device a `CPUn (dev):` block per CPU, a `Total (dev):` block, and the Throughput,
Events and Skips lines. Each statistics row holds two `Label: value` pairs separated by tabs.
Text copied from a terminal, a web page or mail turns the tabs into spaces, drops the leading
space or glues the `^C` that stopped blktrace to a line: the pairs are read wherever they sit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from blkscope.ingest.blkparse.event_line import CTRL_C

_BLOCK = re.compile(r"(CPU(\d{1,9})|Total)\s+\((.*)\):")
# blkparse prints `comm (pid)` with no colon; mail and docs often add one.
_PROCESS = re.compile(r"(.*\S)\s+\((\d+)(?:, \.\.\.)?\):?")
# One `Label: count[, size]` pair of a statistics row; blkparse's %'8Lu may group thousands.
_PAIR = re.compile(
    r"(?P<label>[A-Z][A-Za-z. ]*?):[ \t]+(?P<count>\d[\d,]*?[KMGP]?)"
    r"(?:,[ \t]+(?P<size>\d[\d,]*?[KMGP]?)iB)?(?=[ \t]|$)"
)
_NUMBER = re.compile(r"([\d,]+)([KMGP]?)(?:iB)?")
# Rows of blkparse's summary kept per input (per CPU, per device and per process blocks).
MAX_ROWS = 250_000
_THROUGHPUT = re.compile(r"Throughput \(R/W\):\s+([\d,]{1,26})KiB/s\s+/\s+([\d,]{1,26})KiB/s")
_EVENTS = re.compile(r"Events \((.*)\):\s+([\d,]{1,26}) entries")
_SKIPS = re.compile(r"Skips:\s+([\d,]{1,26}) forward \(([\d,]{1,26}) -\s+([\d.]+)%\)")
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


def _digits(text: str) -> int:
    """A printed counter; past u64's 20 digits it is no number blkparse prints (stored null)."""
    digits = text.replace(",", "")
    return int(digits) if len(digits) <= 20 else 2**64


def _metric(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def stat_pairs(text: str) -> list[tuple[str, str, str | None]] | None:
    """The (label, count, size) pairs of a statistics row, or None when it is not one."""
    pairs = []
    end = 0
    for m in _PAIR.finditer(text):
        if text[end : m.start()].strip():
            return None
        pairs.append((m["label"], m["count"], m["size"]))
        end = m.end()
    return pairs if pairs and not text[end:].strip() else None


@dataclass
class SummaryParser:
    """Feed lines that are not events; it claims the ones that belong to a summary block."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    device: str | None = None
    block: str | None = None
    cpu: int | None = None
    active: bool = False
    group: int = 0
    # A `comm (pid):` header claimed before its statistics rows: if none follows, it was not one.
    pending: tuple[str, int] | None = None
    orphans: list[tuple[str, int]] = field(default_factory=list)

    def feed(self, line: str, line_no: int) -> bool:
        """Consume one line; return False when it is not part of a summary."""
        if len(self.rows) >= MAX_ROWS:  # a real summary is far smaller: the rest is garbage
            return False
        # names in headers are kept as text: bytes that are not UTF-8 are replaced
        text = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace").rstrip("\r")
        while text.startswith(CTRL_C):
            text = text[len(CTRL_C) :]
        text = text.strip()
        if not text:
            return self.active
        if self._settle(text):
            return self._stats(text, line_no)
        m = _BLOCK.fullmatch(text)
        if m:
            self._start(m.group(3), m.group(1), int(m.group(2)) if m.group(2) else None)
            return True
        m = _PROCESS.fullmatch(text)
        if m:
            # Per-process blocks (blkparse -s) come before the devices' blocks and count all
            # devices together: they belong to no device.
            self.active, self.device, self.cpu = True, "", None
            self.block = f"process {text.removesuffix(':')}"
            self.pending = (line, line_no)
            return True
        if not self.active:
            return False
        m = _THROUGHPUT.fullmatch(text)
        if m:
            self._add("throughput_read_kib_s", m.group(1), line_no, "device")
            self._add("throughput_write_kib_s", m.group(2), line_no, "device")
            return True
        m = _EVENTS.fullmatch(text)
        if m:
            self._add("events", m.group(2), line_no, "device")
            return True
        m = _SKIPS.fullmatch(text)
        if m:
            self._add("skips", m.group(1), line_no, "device")
            self._add("skipped_sequences", m.group(2), line_no, "device")
            self.block = None
            self.group += 1  # blkparse closes each device's statistics with its Skips line
            return True
        return False

    def _settle(self, text: str) -> bool:
        """True when text is a statistics row of the current block; settles a pending header."""
        is_stats = self.block is not None and stat_pairs(text) is not None
        if self.pending is not None and not is_stats:
            self.orphans.append(self.pending)
            self.block = None
        self.pending = None
        return is_stats

    def finish(self) -> None:
        """End of input: a process header nothing followed was not one."""
        if self.pending is not None:
            self.orphans.append(self.pending)
            self.pending = None

    def _start(self, device: str, block: str, cpu: int | None) -> None:
        self.device, self.block, self.cpu, self.active = device, block, cpu, True

    def _stats(self, text: str, line_no: int) -> bool:
        pairs = stat_pairs(text)
        assert pairs is not None
        labels = [label for label, _, _ in pairs]
        for k, (label, count, size) in enumerate(pairs):
            name = _metric(label)
            if labels.count(label) > 1:  # "Allocation wait:" twice: read column, then write
                name += "_read" if k == labels.index(label) else "_write"
            self._add(name, count, line_no, self.block)
            if size is not None:
                self._add(name + "_kib", size, line_no, self.block, in_kib=True)
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
                "value": _fits_int64(_digits(m.group(1)) * scale),
                "scale": scale,
                "text": text,
                "line_no": line_no,
                "group": self.group,
            }
        )
