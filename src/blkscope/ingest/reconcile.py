"""Hold what was ingested against the trace's own accounting, so that a damaged trace is named as
such instead of giving confident, distorted numbers.

Two witnesses the trace carries about itself:
- blktrace numbers the events it logs on each CPU of each device (the `seq` column, from 1 when
  tracing starts; an event lost in the relay buffer takes no number): a gap is an event missing
  from what was ingested, a number seen twice an event counted twice, and on one CPU the
  numbers and the times go up together, so a step back in either is an event out of place (a
  time moved, a block pasted in again);
- blkparse's summary (blkparse_summary) counts the events it printed: Q, D and C per device.

`SequenceAudit` is fed every events batch as ingest writes it (bounded memory: per CPU stream a
few counters and the runs of consecutive numbers); `reconcile` turns what it saw, with the
summaries, into the manifest's `reconciliation` section (with the events missing per device,
which the report shows as blkparse shows its skips) and one warning sentence per problem,
naming the numbers. Nothing is dropped or changed: the events stay as the inputs hold them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blkscope.units import format_s

# Events blkparse prints without a number of their own (messages: sequence 0).
UNNUMBERED = ("m",)
# blkparse's Total block per device: the counts that each hold one action's events (SCSI
# pass-through events are counted apart, as PC reads and writes).
SUMMARY_COUNTS = {
    "Q": ("reads_queued", "writes_queued"),
    "D": ("read_dispatches", "write_dispatches"),
    "C": ("reads_completed", "writes_completed"),
}

StreamKey = tuple[int, int, int, int]  # (input_id or -1, dev_major, dev_minor, cpu)


@dataclass
class _Stream:
    """One CPU's numbered events of one device (of one input, for text)."""

    events: int = 0
    runs: list[np.ndarray] = field(default_factory=list)  # (lo, hi) of consecutive numbers
    last: tuple[int, int] | None = None  # (seq, time_ns) of the last event fed
    disorder: int = 0  # steps where the number or the time goes back, as fed
    back_ns: int = 0  # the largest step back in time, as fed

    def add(self, seq: np.ndarray, time_ns: np.ndarray) -> None:
        self.events += len(seq)
        steps_seq, steps_time = seq, time_ns
        if self.last is not None:
            steps_seq = np.concatenate(([self.last[0]], seq))
            steps_time = np.concatenate(([self.last[1]], time_ns))
        back = steps_time[:-1] - steps_time[1:]
        self.disorder += int(((steps_seq[1:] < steps_seq[:-1]) | (back > 0)).sum())
        if back.size:
            self.back_ns = max(self.back_ns, int(back.max()))
        self.last = (int(seq[-1]), int(time_ns[-1]))
        # as logged, a CPU's numbers go up: sorted already, and distinct (no sort to pay)
        numbers = seq if bool((seq[1:] > seq[:-1]).all()) else np.sort(seq)
        step = np.diff(numbers)
        if (step <= 0).any():  # repeats: each number once
            numbers = numbers[np.concatenate(([True], step > 0))]
            step = np.diff(numbers)
        breaks = np.flatnonzero(step > 1)
        lo = numbers[np.concatenate(([0], breaks + 1))]
        hi = numbers[np.concatenate((breaks, [len(numbers) - 1]))]
        self.runs.append(np.stack([lo, hi], axis=1))

    def numbers(self) -> tuple[int, int, int]:
        """(distinct numbers, first, last): the runs merged once, at the end."""
        runs = np.concatenate(self.runs)
        runs = runs[np.argsort(runs[:, 0], kind="stable")]
        reach = np.maximum.accumulate(runs[:, 1])
        # a run that starts past all before it (not next to them) opens a new block of numbers
        starts = np.concatenate(([0], np.flatnonzero(runs[1:, 0] > reach[:-1] + 1) + 1))
        ends = np.concatenate((starts[1:], [len(runs)])) - 1
        distinct = int((reach[ends] - runs[starts, 0] + 1).sum())
        return distinct, int(runs[0, 0]), int(reach[-1])


@dataclass
class SequenceAudit:
    """What the events fed to it say about themselves: per CPU stream its numbers, and per
    (input, device) the Q, D and C events blkparse's summary counts.

    per_input: text inputs each number their own events (two files are two traces); the
    per-CPU files of one blktrace trace are one numbering, whatever file a CPU came from.
    """

    per_input: bool
    streams: dict[StreamKey, _Stream] = field(default_factory=dict)
    counts: dict[tuple[int, int, int], dict[str, int]] = field(default_factory=dict)

    def add(self, events: pa.Table) -> None:
        """Feed one batch of events, in the order they were logged (read)."""
        if events.num_rows == 0:
            return
        events = events.select([*_STREAM, "action", "pc_bytes", "pdu"])
        self._count(events)
        numbered = pc.and_(
            pc.is_valid(events["seq"]),
            pc.fill_null(pc.invert(pc.is_in(events["action"], pa.array(UNNUMBERED))), False),
        )
        batch = events.select(list(_STREAM))
        if not pc.all(numbered).as_py():
            batch = batch.filter(numbered)
        if batch.num_rows == 0:
            return
        cols = [batch[name].to_numpy() for name in _STREAM]
        if not self.per_input:
            cols[0] = np.full(batch.num_rows, -1, dtype=np.int64)
        order, starts = _grouped(cols[:4])
        seq, time_ns = cols[4][order], cols[5][order]
        ends = [*starts[1:], len(order)]
        for a, b in zip(starts, ends, strict=True):
            key: StreamKey = tuple(int(c[order[a]]) for c in cols[:4])  # type: ignore[assignment]
            self.streams.setdefault(key, _Stream()).add(seq[a:b], time_ns[a:b])

    def _count(self, events: pa.Table) -> None:
        plain = pc.and_(pc.is_null(events["pc_bytes"]), pc.is_null(events["pdu"]))
        wanted = pc.and_(plain, pc.is_in(events["action"], pa.array(list(SUMMARY_COUNTS))))
        rows = (
            events.select(["input_id", "dev_major", "dev_minor", "action"])
            .filter(pc.fill_null(wanted, False))
            .group_by(["input_id", "dev_major", "dev_minor", "action"])
            .aggregate([("action", "count")])
            .to_pylist()
        )
        for r in rows:
            per = self.counts.setdefault((r["input_id"], r["dev_major"], r["dev_minor"]), {})
            per[r["action"]] = per.get(r["action"], 0) + r["action_count"]


_STREAM = ("input_id", "dev_major", "dev_minor", "cpu", "seq", "time_ns")
# Bits of each stream key column when packed into one int64 (input ids, Linux's 12 + 20 bit
# dev_t, 16 bits of CPU): one stable argsort instead of a four-key lexsort.
_KEY_BITS = (14, 12, 20, 16)


def _grouped(columns: list[np.ndarray]) -> tuple[np.ndarray, list[int]]:
    """(order, where each group starts in it): the rows grouped by their key (the columns),
    each group in the order it was fed (a stable sort)."""
    n = len(columns[0])
    if all(c[0] == c[-1] and bool((c == c[0]).all()) for c in columns):
        return np.arange(n), [0]  # one stream (one CPU of one device): nothing to sort
    fits = all(
        int(c.min()) >= -1 and int(c.max()) < (1 << bits) - 1
        for c, bits in zip(columns, _KEY_BITS, strict=True)
    )
    if fits:
        packed = np.zeros(n, dtype=np.int64)
        for c, bits in zip(columns, _KEY_BITS, strict=True):
            packed = (packed << bits) | (c.astype(np.int64) + 1)  # +1: the input id -1
        order = np.argsort(packed, kind="stable")
        ordered = packed[order]
        cut = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    else:  # numbers no real trace holds: the general sort
        keys = np.stack([c.astype(np.int64) for c in columns], axis=1)
        order = np.lexsort(keys.T[::-1])
        keys = keys[order]
        cut = np.flatnonzero((keys[1:] != keys[:-1]).any(axis=1)) + 1
    return order, [0, *cut.tolist()]


def _cpus(values: list[int]) -> str:
    return f"CPU{'' if len(values) == 1 else 's'} {', '.join(map(str, sorted(values)))}"


def _stream_docs(audit: SequenceAudit) -> list[dict[str, Any]]:
    docs = []
    for (input_id, major, minor, cpu), s in sorted(audit.streams.items()):
        distinct, first, last = s.numbers()
        docs.append(
            {
                **({"input_id": input_id} if input_id >= 0 else {}),
                "dev": f"{major},{minor}",
                "cpu": cpu,
                "events": s.events,
                "first_seq": first,
                "last_seq": last,
                "missing": last - first + 1 - distinct,
                "repeated": s.events - distinct,
                "steps_back": s.disorder,
                "largest_step_back_ns": s.back_ns,
            }
        )
    return docs


def _summary_docs(audit: SequenceAudit, summaries: Mapping[int, pa.Table]) -> list[dict[str, Any]]:
    """Per (input, device) with a blkparse Total block: its Q, D and C against the events."""
    docs = []
    for input_id, table in sorted(summaries.items()):
        rows = [r for r in table.to_pylist() if r["dev_major"] is not None]
        # blkparse prints a Total block for a device of several CPUs; else its CPU block is it
        with_total = {(r["dev_major"], r["dev_minor"]) for r in rows if r["block"] == "Total"}
        blocks: dict[tuple[int, int], dict[str, dict[str, int | None]]] = {}
        for r in rows:
            dev = (r["dev_major"], r["dev_minor"])
            wanted = r["block"] == "Total" if dev in with_total else r["block"].startswith("CPU")
            if wanted:  # a block printed twice (the text doubled) counts once
                value = None if r["value"] is None or r["scale"] != 1 else r["value"]
                blocks.setdefault(dev, {}).setdefault(r["block"], {})[r["metric"]] = value
        totals: dict[tuple[int, int], dict[str, int | None]] = {}
        for dev, per_block in blocks.items():  # CPU blocks without a Total: summed, as it is
            metrics = set().union(*per_block.values())
            totals[dev] = {
                m: None
                if any(b.get(m) is None for b in per_block.values())
                else sum(b[m] or 0 for b in per_block.values())
                for m in metrics
            }
        for (major, minor), counted in sorted(totals.items()):
            ingested = audit.counts.get((input_id, major, minor), {})
            for action, names in SUMMARY_COUNTS.items():
                values = [counted.get(n) for n in names]
                if any(v is None for v in values):
                    continue  # not printed (or printed as 12K: not a count to hold it to)
                docs.append(
                    {
                        "input_id": input_id,
                        "dev": f"{major},{minor}",
                        "action": action,
                        "summary": sum(v for v in values if v is not None),
                        "ingested": ingested.get(action, 0),
                    }
                )
    return docs


def _warnings(
    streams: list[dict[str, Any]], summary: list[dict[str, Any]], names: Mapping[int, str]
) -> list[str]:
    out = []
    by_dev: dict[str, list[dict[str, Any]]] = {}
    for s in streams:
        by_dev.setdefault(s["dev"], []).append(s)
    for dev, docs in sorted(by_dev.items()):
        # gaps (events lost, as blkparse's skips) are counted and shown, not warned of: an
        # excerpt of a trace has them, and blkparse's own count (in the summary) disagrees
        # when they were cut from a whole trace
        bad = [d for d in docs if d["repeated"]]
        if bad:
            n = sum(d["repeated"] for d in bad)
            out.append(
                f"device {dev}: {n:,} events whose sequence number was already seen: counted "
                f"twice ({_cpus([d['cpu'] for d in bad])})"
            )
        bad = [d for d in docs if d["steps_back"]]
        if bad:
            n = sum(d["steps_back"] for d in bad)
            back = max(d["largest_step_back_ns"] for d in bad)
            out.append(
                f"device {dev}: events out of place: sequence numbers or times go backwards "
                f"{n:,} time{'s' if n != 1 else ''} on {_cpus([d['cpu'] for d in bad])}"
                + (f" (time by up to {format_s(back, 6)})" if back > 0 else "")
            )
    mismatched: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for d in summary:
        mismatched.setdefault((d["input_id"], d["dev"]), []).append(d)
    for (input_id, dev), docs in sorted(mismatched.items()):
        if all(d["summary"] == d["ingested"] for d in docs):
            continue
        said = ", ".join(f"{d['summary']:,} {d['action']}" for d in docs)
        got = ", ".join(f"{d['ingested']:,} {d['action']}" for d in docs)
        out.append(
            f"device {dev}: the blkparse summary of {names.get(input_id, input_id)} counts "
            f"{said}; the events ingested hold {got}"
        )
    return out


def reconcile(
    audit: SequenceAudit, summaries: Mapping[int, pa.Table], names: Mapping[int, str]
) -> dict[str, Any]:
    """The manifest's `reconciliation` section: per CPU stream its numbers (missing, repeated,
    steps back), per device blkparse's counts against the events, and `warnings`, one
    sentence per problem (device ones start with `device MAJOR,MINOR:`). names: input_id ->
    the input's name, for the sentences."""
    streams = _stream_docs(audit)
    summary = _summary_docs(audit, summaries)
    lost: dict[str, int] = {}
    for s in streams:
        lost[s["dev"]] = lost.get(s["dev"], 0) + s["missing"]
    return {
        "streams": streams,
        "summary": summary,
        "missing_events": dict(sorted(lost.items())),
        "warnings": _warnings(streams, summary, names),
    }
