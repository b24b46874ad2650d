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
few counters and the set of its numbers, a bit per number); `reconcile` turns what it saw, with
the summaries, into the manifest's `reconciliation` section (with the events missing per device,
which the report shows as blkparse shows its skips) and one warning sentence per problem,
naming the numbers. Nothing is dropped or changed: the events stay as the inputs hold them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from blkscope import _core
from blkscope.schemas import LAST_PLUGS
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


@dataclass
class SequenceAudit:
    """What the events fed to it say about themselves: per CPU stream its numbers (counted by
    the compiled core, `_core.EventAudit`), and per (input, device) the Q, D and C events
    blkparse's summary counts.

    per_input: text inputs each number their own events (two files are two traces); the
    per-CPU files of one blktrace trace are one numbering, whatever file a CPU came from.
    """

    per_input: bool
    counts: dict[tuple[int, int, int], dict[str, int]] = field(default_factory=dict)
    core: _core.EventAudit = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.core = _core.EventAudit(self.per_input, list(UNNUMBERED))

    def add(self, events: pa.Table) -> list[dict[str, Any]]:
        """Feed one batch of events, in the order they were logged (read); returns its events
        counted by (input_id, dev_major, dev_minor, action, plain): `events`, `first_time_ns`
        and `last_time_ns` of each group, in the order each first appears. Plain: no SCSI
        pass-through bytes and no payload (what blkparse's summary counts)."""
        groups: list[dict[str, Any]] = []
        for batch in events.select(list(_AUDITED)).to_batches():
            groups += pa.record_batch(self.core.add(batch)).to_pylist()
        for g in groups:
            if g["plain"] and g["action"] in SUMMARY_COUNTS:
                per = self.counts.setdefault((g["input_id"], g["dev_major"], g["dev_minor"]), {})
                per[g["action"]] = per.get(g["action"], 0) + g["events"]
        return groups

    def streams(self) -> list[dict[str, Any]]:
        """Each CPU stream fed, by key: input_id (-1 when the inputs are one trace),
        dev_major, dev_minor, cpu, events, distinct numbers, first_seq, last_seq, steps_back,
        largest_step_back_ns."""
        return pa.record_batch(self.core.streams()).to_pylist()

    def last_plugs(self) -> pa.Table:
        """The last_plugs table of the events fed: per pid with P events, its latest P time."""
        # the core's columns are LAST_PLUGS's types: named by the schema, not cast (a cast
        # loads pyarrow.compute, which nothing else in an ingest needs)
        return pa.Table.from_arrays(
            pa.record_batch(self.core.last_plugs()).columns, schema=LAST_PLUGS
        )


# The columns the audit reads.
_AUDITED = ("input_id", "dev_major", "dev_minor", "cpu", "seq", "time_ns", "pid", "action",
            "pc_bytes", "pdu")  # fmt: skip


def _cpus(values: list[int]) -> str:
    return f"CPU{'' if len(values) == 1 else 's'} {', '.join(map(str, sorted(values)))}"


def _stream_docs(audit: SequenceAudit) -> list[dict[str, Any]]:
    return [
        {
            **({"input_id": s["input_id"]} if s["input_id"] >= 0 else {}),
            "dev": f"{s['dev_major']},{s['dev_minor']}",
            "cpu": s["cpu"],
            "events": s["events"],
            "first_seq": s["first_seq"],
            "last_seq": s["last_seq"],
            "missing": s["last_seq"] - s["first_seq"] + 1 - s["distinct"],
            "repeated": s["events"] - s["distinct"],
            "steps_back": s["steps_back"],
            "largest_step_back_ns": s["largest_step_back_ns"],
        }
        for s in audit.streams()
    ]


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
