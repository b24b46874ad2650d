"""The compiled core (blkscope._core, rust/src/ingest/) against the numba kernels it replaces, on
generated input: blkparse text lines, per-CPU blktrace files, the ftrace blk tracer's binary
stream. They must agree row for row and error for error. The one difference allowed: numba's
scanner took an X line whose split sector runs into the next byte ('100 / 164x[fio]') and
dropped that byte; the core leaves such a line to the reference parser."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from blkscope import _core
from blkscope.blk_io_trace import MAGIC, RECORD_STRUCT, VERSION
from blkscope.capture import legacy_blkbin
from blkscope.errors import BlkscopeError
from blkscope.ingest.blkparse import _scan
from blkscope.ingest.blkparse.event_line import render_event
from blkscope.ingest.blkparse.text_stream import scan_chunk
from blkscope.ingest.blktrace import decode, legacy_decode, records
from tests.test_properties import event_rows

# ---------------------------------------------------------------- blkparse text

# Bytes that make a line one the scanner must think about: spacing, digits, brackets, letters of
# actions and RWBS, a CR, bytes that are not ASCII or not UTF-8.
NOISE = st.sampled_from([*b" \t\r0123456789[]+-/.,xUTQGIDCMFPXARSBmWN", 0x80, 0xC3, 0xFF])


@st.composite
def mutated(draw: st.DrawFn, line: bytes) -> bytes:
    """The line with a byte dropped, added or changed, or cut short, or with a tail added."""
    if not line:
        return bytes([draw(NOISE)])
    at = draw(st.integers(0, len(line)))
    how = draw(st.sampled_from(["drop", "add", "change", "cut", "tail"]))
    if how == "drop" and at < len(line):
        return line[:at] + line[at + 1 :]
    if how == "change" and at < len(line):
        return line[:at] + bytes([draw(NOISE)]) + line[at + 1 :]
    if how == "cut":
        return line[:at]
    if how == "tail":
        return line + bytes(draw(st.lists(NOISE, min_size=1, max_size=4)))
    return line[:at] + bytes([draw(NOISE)]) + line[at:]


HEAD = b"  8,0    1        5     0.000102310  4162"
# Lines at the edges of what the scanner takes.
EDGES = [
    HEAD + b"  X   W 100 / 164x[fio]",  # numba took it, dropping the 'x'
    HEAD + b"  X   W 100 / 164 [fio]",
    HEAD + b"  U   N [] 3",  # an empty process name
    HEAD + b"  P   N []",
    HEAD + b"  Q   W 1 + 2147483648 [dd]",  # a count past i32
    HEAD + b"  C   W 1 + 0 [0]",  # blkparse prints no '+ 0'
    HEAD + b"  C   W 1 [-0]",
    HEAD + b"  C   W 1 [-2147483648]",
    HEAD + b"  D   W 1234567890123456789 + 8 [dd]",  # 19 digits
    HEAD + b"  D   W 01 + 8 [dd]",
    HEAD + b"  D  FN [kworker/0:1H]",
    HEAD + b"  D  FF [kworker/0:1H]",
    HEAD + b" UT   N [swapper] 1",
    HEAD + b"  T   N [swapper] 1",
    HEAD + b"  A   W 1 + 8 <- (8,1) 0",
    HEAD + b"  m   N bfq message",
    b"  8,0    1        5 9223372035.999999999  4162  Q   W 1 + 8 [dd]",
    b"  8,0    1        5 9223372036.000000000  4162  Q   W 1 + 8 [dd]",
    b"2147483647,2147483647 2147483647 5 0.000000001 1 Q R 1 + 8 [dd]",
    b"CPU0 (sda):",
    b" Reads Queued:           0,        0KiB\t Writes Queued:       1,        4KiB",
]


# Process names as the kernel's comms mostly are: printable ASCII.
ASCII_COMMS = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=16)


@st.composite
def text_line(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["event"] * 4 + ["mutated"] * 3 + ["edge", "blank", "noise"]))
    if kind == "blank":
        return bytes(draw(st.lists(st.sampled_from(b" \t\r"), max_size=3)))
    if kind == "noise":
        return bytes(draw(st.lists(NOISE, max_size=20)))
    if kind == "edge":
        line = draw(st.sampled_from(EDGES))
    else:
        row = draw(event_rows())
        if row["comm"] is not None and draw(st.integers(0, 3)):
            row["comm"] = draw(ASCII_COMMS)
        line = render_event(row).encode("utf-8", "surrogateescape")
    return draw(mutated(line)) if kind != "event" else line


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(text_line(), min_size=1, max_size=30),
    st.booleans(),
    st.integers(1, 10**6),
)
def test_the_core_scans_text_as_numba_did(
    lines: list[bytes], newline_at_end: bool, first: int
) -> None:
    assume(b"\n" not in b"".join(lines))
    event(_same_scan(lines, newline_at_end, first))


@pytest.mark.parametrize("line", EDGES)
def test_edge_lines_scan_as_numba_did(line: bytes) -> None:
    _same_scan([line], True, 1)


def _same_scan(lines: list[bytes], newline_at_end: bool, first: int) -> str:
    """Check that both scan the lines alike; say what they did with them."""
    data = b"\n".join(lines) + (b"\n" if newline_at_end else b"")
    old_table, old_spans, old_lines = _scan.scan_chunk(data, first, 3)
    new = scan_chunk(data, first, 3)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def text(line_no: int) -> bytes:
        return lines[line_no - first]

    def rendered(row: dict[str, Any]) -> bytes:
        return render_event(row).encode("utf-8", "surrogateescape")

    # numba's lost-byte lines: rows that do not render back to their line (X lines only)
    lost = {r["line_no"] for r in _rows(old_table) if rendered(r) != text(r["line_no"])}
    assert all(text(n).split()[5] == b"X" for n in lost)
    assert [r for r in _rows(old_table) if r["line_no"] not in lost] == _rows(new.table)
    expected_spans = sorted(
        [tuple(span) for span in old_spans.T.tolist()]
        + [(n, starts[n - first], starts[n - first] + len(text(n))) for n in lost]
    )
    new_spans = list(zip(*(new.slow.column(k).to_pylist() for k in range(3)), strict=True))
    assert new_spans == expected_spans
    assert new.lines == old_lines
    return f"{len(lost)} lost-byte lines" if lost else f"{new.table.num_rows} of {len(lines)} taken"
    # what the scanner takes, it takes exactly: each row prints as its line
    assert all(rendered(r) == text(r["line_no"]) for r in _rows(new.table))


# ---------------------------------------------------------------- blktrace binaries

NOTIFY, PC = 1 << 10, 1 << 9
CATEGORY_BITS = [1 << b for b in (0, 1, 2, 3, 8, 9, 11, 12, 13, 15)]
DEVICES = [(8 << 20) | 0, (8 << 20) | 16, 254 << 20]
I64 = 2**63 - 1


@st.composite
def payload(draw: st.DrawFn, code: int, cgroup: bool) -> bytes:
    head = draw(st.binary(min_size=8, max_size=8)) if cgroup and draw(st.booleans()) else b""
    body = draw(
        st.one_of(
            st.binary(max_size=24),
            st.just(struct.pack(">Q", draw(st.integers(0, 2**64 - 1)))),  # X, U: a be64
            st.just(
                struct.pack(
                    ">IIQ", draw(st.sampled_from(DEVICES)), 0, draw(st.integers(0, 2**64 - 1))
                )
            ),
            st.just(draw(st.sampled_from([b"fio", b"kworker/0:1", b"caf\xe9", b""])) + b"\0" * 4),
            st.just(
                struct.pack("<II", draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 10**9)))
            ),
        )
    )
    return head + body


@st.composite
def blk_record(draw: st.DrawFn, cpu: int, seq: int) -> bytes:
    note = draw(st.integers(0, 5)) == 0
    code = draw(st.integers(0, 3)) if note else draw(st.integers(0, 18))
    category = NOTIFY if note else sum(draw(st.sets(st.sampled_from(CATEGORY_BITS), max_size=4)))
    cgroup = draw(st.integers(0, 3)) == 0
    action = (category << 16) | (1 << 8 if cgroup else 0) | code
    big = draw(st.integers(0, 40)) == 0  # a damaged field now and then
    pdu = draw(payload(code, cgroup))
    fields = [
        MAGIC | VERSION,
        draw(st.sampled_from([seq, seq, 0, 2**32 - 1])),
        draw(st.integers(0, 40)) * 1000 + (2**63 + 5 if big and draw(st.booleans()) else 10**9),
        draw(st.integers(0, 2**40)) if not big else 2**63 + draw(st.integers(0, 9)),
        draw(st.sampled_from([0, 512, 4096, 1 << 20, 2**32 - 1])),
        action,
        draw(st.sampled_from([0, 1, 100, 200, 2**32 - 1])),
        draw(st.sampled_from(DEVICES)),
        cpu if not (big and draw(st.booleans())) else 2**31 + cpu,
        draw(st.integers(0, 65535)),
        len(pdu),
    ]
    return RECORD_STRUCT.pack(*fields) + pdu


@st.composite
def per_cpu_file(draw: st.DrawFn, cpu: int) -> bytes:
    n = draw(st.integers(1, 25))
    data = b"".join(draw(blk_record(cpu, seq)) for seq in range(1, n + 1))
    damage = draw(st.sampled_from(["none"] * 8 + ["cut", "garbage", "swap", "version"]))
    if damage == "cut":
        return data[: draw(st.integers(1, len(data)))]
    if damage == "garbage":
        return data + draw(st.binary(min_size=1, max_size=60))
    if damage == "swap":
        return (MAGIC | VERSION).to_bytes(4, "big") + data[4:]
    if damage == "version":
        return data[:0] + (MAGIC | 6).to_bytes(4, "little") + data[4:]
    return data


def _outcome(call: Any) -> tuple[str, ...] | Any:
    """What a call gives, or the error it raises as (type, message, hint)."""
    try:
        return call()
    except BlkscopeError as exc:
        return (type(exc).__name__, str(exc), str(exc.hint))


def _decoded(trace: Any) -> dict[str, Any]:
    return {
        "rows": [
            _outcome(lambda s=s: _rows(trace.build(s, min(s + 7, trace.num_rows))))
            for s in range(0, trace.num_rows, 7)
        ],
        "clock": vars(trace.clock),
        "skipped": trace.skipped_by_code,
        "notes": (trace.other_notes, trace.messages),
        "comms": trace.comms,
    }


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(1, 3).flatmap(lambda n: st.tuples(*(per_cpu_file(cpu) for cpu in range(n)))))
def test_the_core_decodes_blktrace_as_numba_did(tmp_path: Path, files: tuple[bytes, ...]) -> None:
    paths = []
    for cpu, data in enumerate(files):
        path = tmp_path / f"t.blktrace.{cpu}"
        path.write_bytes(data)
        paths.append(str(path))

    def both(read: Any, dec: Any) -> Any:
        def run() -> Any:
            return _decoded(dec([read(p) for p in paths], [0]))

        return _outcome(run)

    old = both(legacy_decode.read_records, legacy_decode.decode)
    new = both(records.read_records, decode.decode)
    assert new == old
    if isinstance(old, tuple):
        event(old[1].split(": ", 1)[1].split(" ")[0])  # what the error starts with
    else:
        errors = sum(isinstance(r, tuple) for r in old["rows"])
        event(f"decoded {len(old['rows'])} slices, {errors} out of range")


# ---------------------------------------------------------------- ftrace's binary stream


@st.composite
def ftrace_stream(draw: st.DrawFn) -> bytes:
    parts = []
    for k in range(draw(st.integers(0, 20))):
        if draw(st.integers(0, 12)) == 0:
            parts.append(draw(st.sampled_from([b"CPU:1 [LOST 5 EVENTS]\n", b"garbage!" * 3])))
            continue
        cpu = draw(st.integers(0, 2))
        record = draw(blk_record(cpu, k + 1))
        parts.append(struct.pack("<IIQ", 7, cpu, k) + record)
    data = b"".join(parts)
    return data[: draw(st.integers(0, len(data)))] if draw(st.booleans()) else data


@settings(max_examples=200, deadline=None)
@given(ftrace_stream(), st.data())
def test_the_core_indexes_ftrace_records_as_numba_did(data: bytes, draw: st.DataObject) -> None:
    at = draw.draw(st.integers(0, len(data)))
    buf = np.frombuffer(data, dtype=np.uint8)
    n, end, bad, cols = legacy_blkbin._index(buf, at, len(data), len(data) // 64 + 1)
    new_end, new_bad, found = _core.index_ftrace_records(data, at, len(data))
    batch = pa.record_batch(found)
    assert (new_end, new_bad) == (end, bad)
    assert [c.to_pylist() for c in batch.columns] == [c[:n].tolist() for c in cols]
    if not n:
        return
    devices = np.array(draw.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    sequences = np.array(draw.draw(st.lists(st.integers(0, 2**31), min_size=3, max_size=3)))
    old_sequences = sequences.copy()
    old = legacy_blkbin._gather(buf, cols[0][:n], cols[1][:n], devices, old_sequences)
    out, last = _core.renumbered_blk_records(
        data, batch.column(0), batch.column(1), pa.array(devices), sequences.tolist()
    )
    assert out == old.tobytes()
    assert last == old_sequences.tolist()


def test_the_generated_traces_golden_is_numbas(tmp_path: Path) -> None:
    """tests/golden/blktrace_generated.json.zst, which outlives numba, is what numba gave."""
    from tests.test_blktrace_generated import CASES, _golden, outcome, trace_files

    numba = [
        outcome(tmp_path, trace_files(case), legacy_decode.read_records, legacy_decode.decode)
        for case in range(CASES)
    ]
    assert _golden(numba) == numba
