"""The compiled audit of ingested events (`_core.EventAudit` behind reconcile.SequenceAudit)
against a plain reading of what it counts: per CPU stream its numbered events, distinct
numbers, first and last, and steps back; per (input, device, action, plain) the events and
their first and last times. Rows are generated, then fed in batches cut anywhere."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope.ingest.codes import events_table
from blkscope.ingest.reconcile import UNNUMBERED, SequenceAudit

# (input_id, dev_minor, cpu, seq or None, action, time_ns, pc_bytes or None)
Row = tuple[int, int, int, int | None, str, int, int | None]

rows_strategy = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.sampled_from([0, 16]),
        st.integers(0, 2),
        st.one_of(st.none(), st.integers(0, 30)),
        st.sampled_from(["Q", "D", "C", "m", "UT"]),
        st.integers(-(2**61), 2**61) | st.integers(0, 100),
        st.one_of(st.none(), st.just(512)),
    ),
    min_size=1,
    max_size=120,
)


def _table(rows: list[Row]) -> pa.Table:
    cols: dict[str, Any] = {
        "input_id": pa.array([r[0] for r in rows], pa.int16()),
        "dev_major": pa.array([8] * len(rows), pa.int32()),
        "dev_minor": pa.array([r[1] for r in rows], pa.int32()),
        "cpu": pa.array([r[2] for r in rows], pa.int32()),
        "seq": pa.array([r[3] for r in rows], pa.int64()),
        "action": pa.array([r[4] for r in rows], pa.string()),
        "time_ns": pa.array([r[5] for r in rows], pa.int64()),
        "pc_bytes": pa.array([r[6] for r in rows], pa.int64()),
    }
    return events_table(len(rows), cols)


def _expected_streams(rows: list[Row], per_input: bool) -> list[dict[str, Any]]:
    fed: dict[tuple[int, int, int, int], list[tuple[int, int]]] = {}
    for input_id, minor, cpu, seq, action, time_ns, _ in rows:
        if seq is None or action in UNNUMBERED:
            continue
        key = (input_id if per_input else -1, 8, minor, cpu)
        fed.setdefault(key, []).append((seq, time_ns))
    out = []
    for key, events in sorted(fed.items()):
        numbers = {s for s, _ in events}
        steps = list(itertools.pairwise(events))
        out.append(
            {
                "input_id": key[0],
                "dev_major": 8,
                "dev_minor": key[2],
                "cpu": key[3],
                "events": len(events),
                "distinct": len(numbers),
                "first_seq": min(numbers),
                "last_seq": max(numbers),
                "steps_back": sum(1 for a, b in steps if b[0] < a[0] or b[1] < a[1]),
                "largest_step_back_ns": max([0, *(a[1] - b[1] for a, b in steps)]),
            }
        )
    return out


@settings(max_examples=300, deadline=None)
@given(rows_strategy, st.lists(st.integers(1, 40), max_size=6), st.booleans())
def test_the_audit_counts_as_a_plain_reading_does(
    rows: list[Row], cuts: list[int], per_input: bool
) -> None:
    audit = SequenceAudit(per_input=per_input)
    groups: dict[tuple[Any, ...], list[int]] = {}
    at = 0
    for size in [*cuts, len(rows)]:
        batch = rows[at : at + size]
        at += len(batch)
        if not batch:
            continue
        for g in audit.add(_table(batch)):
            key = (g["input_id"], g["dev_minor"], g["action"], g["plain"])
            n, lo, hi = groups.get(key, [0, g["first_time_ns"], g["last_time_ns"]])
            groups[key] = [n + g["events"], min(lo, g["first_time_ns"]), max(hi, g["last_time_ns"])]
    assert audit.streams() == _expected_streams(rows, per_input)
    expected: dict[tuple[Any, ...], list[int]] = {}
    for input_id, minor, _, _, action, time_ns, pc_bytes in rows:
        key = (input_id, minor, action, pc_bytes is None)
        n, lo, hi = expected.get(key, [0, time_ns, time_ns])
        expected[key] = [n + 1, min(lo, time_ns), max(hi, time_ns)]
    assert groups == expected
    counts: dict[tuple[int, int, int], dict[str, int]] = {}
    for (input_id, minor, action, plain), (n, _, _) in expected.items():
        if plain and action in ("Q", "D", "C"):
            per = counts.setdefault((input_id, 8, minor), {})
            per[action] = per.get(action, 0) + n
    assert audit.counts == counts


def test_groups_come_in_the_order_each_first_appears() -> None:
    audit = SequenceAudit(per_input=True)
    rows: list[Row] = [
        (0, 16, 0, 1, "Q", 50, None),
        (0, 0, 1, 1, "Q", 10, None),
        (0, 16, 0, 2, "C", 70, None),
        (0, 16, 0, 3, "Q", 20, 512),
    ]
    groups = audit.add(_table(rows))
    assert [(g["dev_minor"], g["action"], g["plain"], g["events"]) for g in groups] == [
        (16, "Q", True, 1),
        (0, "Q", True, 1),
        (16, "C", True, 1),
        (16, "Q", False, 1),
    ]
    assert audit.counts == {(0, 8, 16): {"Q": 1, "C": 1}, (0, 8, 0): {"Q": 1}}
