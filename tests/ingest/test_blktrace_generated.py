"""Generated blktrace files (every action and note, cgroup ids, payloads of any length, damaged
fields, damaged files) decoded as the JIT-compiled decoder decoded them before the compiled core took
over: tests/golden/blktrace_generated.json.zst holds what it gave (rows, clock, notes, or the
error), frozen while both existed and a differential test (gone with that decoder) found them equal."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import pytest
import zstandard

from blkscope.blk_io_trace import MAGIC, RECORD_STRUCT, VERSION
from blkscope.errors import BlkscopeError
from blkscope.ingest.blktrace.decode import decode
from blkscope.ingest.blktrace.records import read_records
from tests.golden import updating

GOLDEN = Path(__file__).parents[1] / "golden" / "blktrace_generated.json.zst"
CASES = 150
NOTIFY = 1 << 10
CATEGORY_BITS = [1 << b for b in (0, 1, 2, 3, 8, 9, 11, 12, 13, 15)]
DEVICES = [(8 << 20) | 0, (8 << 20) | 16, 254 << 20]
NAMES = [b"fio", b"kworker/0:1", b"caf\xe9", b""]


def _payload(rng: random.Random, cgroup: bool) -> bytes:
    head = rng.randbytes(8) if cgroup and rng.random() < 0.5 else b""
    kind = rng.randrange(5)
    if kind == 0:
        body = rng.randbytes(rng.randrange(25))
    elif kind == 1:  # X, U: a big-endian u64
        body = struct.pack(">Q", rng.getrandbits(64))
    elif kind == 2:  # A: device_from, device_to, sector_from
        body = struct.pack(">IIQ", rng.choice(DEVICES), 0, rng.getrandbits(64))
    elif kind == 3:  # a process name
        body = rng.choice(NAMES) + b"\0" * 4
    else:  # a timestamp note
        body = struct.pack("<II", rng.getrandbits(32), rng.randrange(10**9))
    return head + body


def _record(rng: random.Random, cpu: int, seq: int) -> bytes:
    note = rng.randrange(6) == 0
    code = rng.randrange(4) if note else rng.randrange(19)
    category = NOTIFY if note else sum(rng.sample(CATEGORY_BITS, rng.randrange(5)))
    cgroup = rng.randrange(4) == 0
    damaged = rng.randrange(150) == 0
    pdu = _payload(rng, cgroup)
    fields = [
        MAGIC | VERSION,
        rng.choice([seq, seq, 0, 2**32 - 1]),
        rng.randrange(41) * 1000 + (2**63 + 5 if damaged and rng.random() < 0.5 else 10**9),
        2**63 + rng.randrange(10) if damaged else rng.randrange(2**40),
        rng.choice([0, 512, 4096, 1 << 20, 2**32 - 1]),
        (category << 16) | (1 << 8 if cgroup else 0) | code,
        rng.choice([0, 1, 100, 200, 2**32 - 1]),
        rng.choice(DEVICES),
        2**31 + cpu if damaged and rng.random() < 0.5 else cpu,
        rng.randrange(65536),
        len(pdu),
    ]
    return RECORD_STRUCT.pack(*fields) + pdu


def _per_cpu_file(rng: random.Random, cpu: int) -> bytes:
    data = b"".join(_record(rng, cpu, seq) for seq in range(1, rng.randrange(1, 26) + 1))
    damage = rng.choice(["none"] * 20 + ["cut", "garbage", "swap", "version"])
    if damage == "cut":
        return data[: rng.randrange(1, len(data) + 1)]
    if damage == "garbage":
        return data + rng.randbytes(rng.randrange(1, 61))
    if damage == "swap":
        return (MAGIC | VERSION).to_bytes(4, "big") + data[4:]
    if damage == "version":
        return (MAGIC | 6).to_bytes(4, "little") + data[4:]
    return data


def trace_files(case: int) -> list[bytes]:
    """The per-CPU files of generated case `case` (the same on every run)."""
    rng = random.Random(case)
    return [_per_cpu_file(rng, cpu) for cpu in range(rng.randrange(1, 4))]


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v.hex() if isinstance(v, bytes) else v for k, v in row.items() if v is not None}


def outcome(tmp: Path, files: list[bytes], read: Any = read_records, dec: Any = decode) -> Any:
    """What reading and decoding the files gives, as JSON: the rows (a slice of 7 at a time,
    or the error a slice raised), the clock, notes and names; or the error reading raised."""
    paths = []
    for cpu, data in enumerate(files):
        path = tmp / f"t.blktrace.{cpu}"
        path.write_bytes(data)
        paths.append(str(path))

    def error(exc: BlkscopeError) -> list[str]:
        return [type(exc).__name__, str(exc).replace(str(tmp), "DIR"), str(exc.hint)]

    try:
        trace = dec([read(p) for p in paths], [0])
    except BlkscopeError as exc:
        return {"error": error(exc)}
    slices: list[Any] = []
    for start in range(0, trace.num_rows, 7):
        try:
            table = trace.build(start, min(start + 7, trace.num_rows))
            slices.append([_json_row(r) for r in table.to_pylist()])
        except BlkscopeError as exc:
            slices.append({"error": error(exc)})
    return {
        "slices": slices,
        "clock": vars(trace.clock),
        "skipped": {str(k): v for k, v in trace.skipped_by_code.items()},
        "notes": [trace.other_notes, trace.messages],
        "comms": {str(k): v for k, v in sorted(trace.comms.items())},
    }


def _golden(actual: list[Any]) -> list[Any]:
    if updating():
        GOLDEN.write_bytes(zstandard.compress(json.dumps(actual).encode(), 19))
    return json.loads(zstandard.decompress(GOLDEN.read_bytes()))


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    tmp = tmp_path_factory.mktemp("golden")
    return _golden([outcome(tmp, trace_files(case)) for case in range(CASES)])


@pytest.mark.parametrize("case", range(CASES))
def test_generated_trace_decodes_as_frozen(golden: list[Any], case: int, tmp_path: Path) -> None:
    assert outcome(tmp_path, trace_files(case)) == golden[case]


def test_the_cases_cover_rows_and_errors(golden: list[Any]) -> None:
    """The frozen outcomes hold decoded rows, out-of-range fields and damaged files alike."""
    decoded = [g for g in golden if "slices" in g]
    assert len(decoded) > CASES // 3
    assert sum(len(s) for g in decoded for s in g["slices"] if isinstance(s, list)) > 800
    assert any(isinstance(s, dict) for g in decoded for s in g["slices"])
    reasons = {g["error"][1].split(": ", 1)[1].split(" ")[0] for g in golden if "error" in g}
    assert {"truncated", "corrupted", "big-endian", "unsupported", "record"} <= reasons
