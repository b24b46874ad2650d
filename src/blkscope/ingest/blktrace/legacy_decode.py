"""The numpy/numba decoder of blktrace records that decode.py used before the compiled core
(blkscope._core) took over: kept, with nothing in the package calling it, for the differential
test against the core (tests/test_ingest_differential.py) until numba leaves the package."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from blkscope.blk_io_trace import (
    CATEGORY_SHIFT,
    CODE_LETTERS,
    CODE_MASK,
    DEV_MINOR_BITS,
    DEV_MINOR_MASK,
    MAGIC,
    MAGIC_MASK,
    RECORD,
    RECORD_BYTES,
    TC_AHEAD,
    TC_DISCARD,
    TC_FLUSH,
    TC_FUA,
    TC_META,
    TC_NOTIFY,
    TC_PC,
    TC_SYNC,
    TC_WRITE,
    TN_MESSAGE,
    TN_PROCESS,
    TN_TIMESTAMP,
    VERSION,
)
from blkscope.errors import InputFormatError
from blkscope.ingest import rwbs_bits as R
from blkscope.ingest.blktrace.payloads import (
    TA_CGROUP,
    be64_payload,
    cgroup_column,
    comm_arrays,
    message_texts,
    pc_payload_hex,
    remap_columns,
    remap_payloads,
)
from blkscope.ingest.blktrace.records import RecordFile
from blkscope.ingest.codes import constant_strings, events_table, rwbs_columns
from blkscope.ingest.sources import open_source
from blkscope.numba_kernels import compiled

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

LETTERS = (*sorted(set(CODE_LETTERS.values())), "m")
_LETTER_INDEX = {a: i for i, a in enumerate(LETTERS)}
_CODE_TO_INDEX = np.full(256, -1, dtype=np.int64)
for _code, _letter in CODE_LETTERS.items():
    _CODE_TO_INDEX[_code] = _LETTER_INDEX[_letter]
_M_INDEX = _LETTER_INDEX["m"]

_ACTION_STRINGS = pa.array(LETTERS, pa.string())

_SECTOR_PLUS = {"Q", "G", "I", "D", "B", "M", "F", "S", "A"}
_COMPLETION = {"C", "R"}
_NO_COMM = {"C", "R", "A", "m"}
_UNPLUG = {"U", "UT"}
_PC_SHAPES = {"Q", "I", "D", "B", "C", "R"}


@dataclass
class TraceClock:
    """What a later clock model needs: the trace's time zero and its wall-clock notes."""

    base_time_ns: int
    smallest_time_ns: int = 0
    wall_notes: list[dict[str, int]] = field(default_factory=list)


@dataclass
class DecodedTrace:
    """The events of a set of per-CPU files, merged by time, and what the notes said."""

    num_rows: int
    build: Callable[[int, int], pa.Table]
    clock: TraceClock
    skipped_by_code: dict[int, int]
    other_notes: int
    messages: int
    comms: dict[int, str]

    def slices(self, rows: int = 1 << 20) -> Iterator[pa.Table]:
        """The events table in print order, `rows` at a time (bounded memory on big traces)."""
        for start in range(0, self.num_rows, rows):
            yield self.build(start, min(start + rows, self.num_rows))

    @property
    def events(self) -> pa.Table:
        """The whole events table."""
        return self.build(0, self.num_rows)


@compiled
def _walk(buf, offsets, packed):  # type: ignore[no-untyped-def]
    """Follow pdu_len from record to record; copy each 48-byte header; return (count, end)."""
    n = len(buf)
    k = 0
    o = 0
    while o + 48 <= n:
        plen = buf[o + 46] | (buf[o + 47] << 8)
        if o + 48 + plen > n:
            return k, o
        offsets[k] = o
        for j in range(48):
            packed[k, j] = buf[o + j]
        k += 1
        o += 48 + plen
    return k, o


def _check_magic(path: str, records: np.ndarray, offsets: np.ndarray, first_index: int = 0) -> None:
    magic = records["magic"]
    bad = np.flatnonzero((magic & MAGIC_MASK) != MAGIC)
    if len(bad):
        raw = int(magic[int(bad[0])])
        offset = int(offsets[int(bad[0])])
        i = int(bad[0]) + first_index
        swapped = int.from_bytes(raw.to_bytes(4, "little"), "big")
        if i == 0 and (swapped & MAGIC_MASK) == MAGIC:
            raise InputFormatError(
                path,
                "big-endian blktrace file: only little-endian (x86, arm64) traces are supported",
                hint="run blkparse on the machine type that recorded it and ingest its text output",
            )
        what = "not a blktrace file" if i == 0 else "corrupted blktrace file"
        raise InputFormatError(
            path,
            f"{what}: bad magic 0x{raw:08x} in record {i + 1} at "
            f"byte offset {offset} (expected 0x{MAGIC | VERSION:08x})",
            hint="pass the per-CPU files NAME.blktrace.N that blktrace wrote",
        )
    bad = np.flatnonzero((magic & ~np.uint32(MAGIC_MASK)) != VERSION)
    if len(bad):
        i = int(bad[0])
        raise InputFormatError(
            path,
            f"unsupported blktrace version {int(magic[i]) & ~MAGIC_MASK & 0xFFFFFFFF} in "
            f"record {i + first_index + 1} (only version {VERSION} is "
            "supported)",
        )


def read_records(path: str) -> RecordFile:
    """Load one per-CPU blktrace file (plain or compressed) and split it into records."""
    source = open_source(path)
    try:
        try:
            blob = source.stream.read()
        except Exception as exc:  # any decompressor failure means a damaged input
            raise InputFormatError(
                path, f"{source.compression} stream is corrupt or truncated: {exc}"
            ) from None
        buf = np.frombuffer(blob, dtype=np.uint8)
        if len(buf) == 0:
            raise InputFormatError(
                path,
                "empty blktrace file (no records)",
                hint="was the trace stopped before any IO happened?",
            )
        cap = len(buf) // RECORD_BYTES + 1
        offsets = np.empty(cap, dtype=np.int64)
        packed = np.empty((cap, RECORD_BYTES), dtype=np.uint8)
        count, end = _walk(buf, offsets, packed)
        records = packed[:count].reshape(-1).view(RECORD)
        offsets = offsets[:count]
        _check_magic(path, records, offsets)
        if len(buf) - end >= 4:
            # The record that did not fit may be garbage rather than cut short: say so first.
            stub = np.frombuffer(blob[end : end + 4] + bytes(RECORD_BYTES - 4), dtype=RECORD)
            _check_magic(path, stub, np.array([end]), first_index=count)
        if end != len(buf):
            raise InputFormatError(
                path,
                f"truncated blktrace file: record {count + 1} at byte "
                f"offset {end} is cut short ({len(buf) - end} of its bytes "
                f"present)",
                hint="copy the file again, or cut it at a record boundary",
            )
        return RecordFile(
            path, blob, offsets, source.compression, source.bytes_read, source.sha256()
        )
    finally:
        source.close()


def _indices(letters: set[str]) -> np.ndarray:
    return np.array(sorted(_LETTER_INDEX[a] for a in letters), dtype=np.int64)


def _rwbs_codes(cat: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    op = np.where(cat & TC_DISCARD, 2, np.where(cat & TC_WRITE, 1, np.where(nbytes > 0, 0, 3)))
    return (
        np.where(cat & TC_FLUSH, R.PREFLUSH, 0)
        | (op << R.OP_SHIFT)
        | np.where(cat & TC_FUA, R.FUA, 0)
        | np.where(cat & TC_AHEAD, R.READAHEAD, 0)
        | np.where(cat & TC_SYNC, R.SYNC, 0)
        | np.where(cat & TC_META, R.META, 0)
    )


def _decode_text(pdu: bytes) -> str:
    return pdu.split(b"\x00", 1)[0].decode("utf-8", "surrogateescape")


def _notes(
    files: Sequence[RecordFile],
    notify: list[tuple[int, int]],
    clock: TraceClock,
) -> dict[int, str]:
    """Read process-name and timestamp notes (few per trace); return comms by pid."""
    comms: dict[int, str] = {}
    for f_i, r_i in notify:
        rec = files[f_i].records[r_i]
        pdu = files[f_i].pdu(r_i)
        action = int(rec["action"])
        if action & TA_CGROUP:
            pdu = pdu[8:]
        code = action & CODE_MASK
        if code == TN_PROCESS:
            comms[int(rec["pid"])] = _decode_text(pdu)
        elif code == TN_TIMESTAMP and len(pdu) >= 8:
            sec, nsec = np.frombuffer(pdu[:8], dtype="<u4").tolist()
            dev = int(rec["device"])
            clock.wall_notes.append(
                {
                    "dev_major": dev >> DEV_MINOR_BITS,
                    "dev_minor": dev & DEV_MINOR_MASK,
                    "cpu": int(rec["cpu"]),
                    "time": int(rec["time"]),
                    "wall_ns": sec * 1_000_000_000 + nsec,
                }
            )
    return comms


def refuse_out_of_range(
    files: Sequence[RecordFile],
    file_idx: np.ndarray,
    rec_idx: np.ndarray,
    name: str,
    values: np.ndarray,
    where: np.ndarray | None,
    largest: int,
) -> None:
    """Raise an InputFormatError naming the first record whose field does not fit its column
    (unsigned fields of a damaged record would otherwise wrap into wrong numbers)."""
    over = values > np.uint64(largest) if values.dtype == np.uint64 else values > largest
    bad = np.flatnonzero(over if where is None else over & where)
    if len(bad):
        i = int(bad[0])
        f = files[int(file_idx[i])]
        rec = int(rec_idx[i])
        raise InputFormatError(
            f.path,
            f"record {rec + 1} at byte offset {int(f.offsets[rec])}: {name} "
            f"{int(values[i])} is out of range (largest {largest:,})",
            hint="the file is damaged there; blkparse would print a wrong number",
        )


def decode(files: Sequence[RecordFile], input_ids: Sequence[int]) -> DecodedTrace:
    """Merge the per-CPU files by blkparse's print order and build the events table."""
    recs = np.concatenate([f.records for f in files])
    file_idx = np.concatenate(
        [np.full(len(f.records), i, dtype=np.int64) for i, f in enumerate(files)]
    )
    rec_idx = np.concatenate([np.arange(len(f.records), dtype=np.int64) for f in files])
    refuse_out_of_range(files, file_idx, rec_idx, "time", recs["time"], None, INT64_MAX)
    action = recs["action"].astype(np.int64)
    cat = action >> CATEGORY_SHIFT
    code = action & CODE_MASK
    is_note = (cat & TC_NOTIFY) != 0
    is_msg = is_note & (code == TN_MESSAGE)
    other_notes = np.flatnonzero(is_note & ~is_msg)
    clock = TraceClock(base_time_ns=0)
    comms = _notes(
        files,
        list(zip(file_idx[other_notes].tolist(), rec_idx[other_notes].tolist(), strict=True)),
        clock,
    )
    letter = np.where(is_note, -1, _CODE_TO_INDEX[code])
    letter[is_msg] = _M_INDEX
    # blkparse's time zero is its first event: notes do not count. Messages do not either, since
    # blkparse 1.2 drops cgroup-tagged ones (bfq's) and we want its times on such traces.
    printed_times = recs["time"][(letter >= 0) & ~is_msg]
    if not len(printed_times):
        printed_times = recs["time"][letter >= 0]
    base = int(printed_times.min()) if len(printed_times) else int(recs["time"].min())
    clock.base_time_ns = base
    clock.smallest_time_ns = int(recs["time"].min())
    skipped = np.flatnonzero((letter < 0) & ~is_note)
    skipped_by_code = {
        int(c): int(n) for c, n in zip(*np.unique(code[skipped], return_counts=True), strict=True)
    }
    keep = np.flatnonzero(letter >= 0)
    keep = _blkparse_order(keep, recs["time"], recs["cpu"], recs["sequence"], is_msg)
    msg_rows = np.flatnonzero(is_msg)
    texts = pa.array([], pa.string())
    position = np.full(len(recs), -1, dtype=np.int64)
    if len(msg_rows):
        texts = message_texts(files, file_idx[msg_rows], rec_idx[msg_rows], recs[msg_rows])
        position[msg_rows] = np.arange(len(msg_rows))
    ids = np.asarray(input_ids, dtype=np.int16)

    def build(start: int, stop: int) -> pa.Table:
        rows = keep[start:stop]
        at = position[rows]
        messages = texts.take(pa.array(at, mask=at < 0)) if len(msg_rows) else None
        return _events_table(
            files,
            recs[rows],
            letter[rows],
            file_idx[rows],
            rec_idx[rows],
            base,
            comms,
            messages,
            ids,
            start,
        )

    return DecodedTrace(
        len(keep), build, clock, skipped_by_code, len(other_notes), len(msg_rows), comms
    )


def _blkparse_order(
    rows: np.ndarray, time: np.ndarray, cpu: np.ndarray, seq: np.ndarray, is_msg: np.ndarray
) -> np.ndarray:
    """Order rows by time then CPU, except that on a time tie blkparse keeps printing from the
    CPU of the event it printed last (its merge only switches CPU on a strictly earlier time).
    Messages do not count as that last event: blkparse 1.2 drops bfq's, and the fio-sched
    capture's order agrees only this way."""
    rows = rows[np.lexsort((seq[rows], cpu[rows], time[rows]))]
    t, c = time[rows], cpu[rows]
    tie = np.flatnonzero((t[1:] == t[:-1]) & (c[1:] != c[:-1]))
    done = 0
    for k in tie.tolist():
        if k < done:
            continue
        start = k
        while start > 0 and t[start - 1] == t[k]:
            start -= 1
        end = k + 2
        while end < len(rows) and t[end] == t[k]:
            end += 1
        before = start - 1
        while before >= 0 and is_msg[rows[before]]:
            before -= 1
        done = end
        if before < 0:
            continue
        group = rows[start:end]
        last_cpu = cpu[rows[before]]
        rows[start:end] = group[np.lexsort((seq[group], cpu[group], cpu[group] != last_cpu))]
    return rows


def _masked(values: np.ndarray, valid: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(values, type_, mask=~valid)


def _printed_fields(
    letter: np.ndarray, cat: np.ndarray, nbytes: np.ndarray
) -> dict[str, np.ndarray]:
    """Which rows blkparse prints each optional field for (process_default's cases)."""
    is_plus = np.isin(letter, _indices(_SECTOR_PLUS)) & (nbytes > 0)
    is_cr = np.isin(letter, _indices(_COMPLETION))
    is_x = letter == _LETTER_INDEX["X"]
    # SCSI pass-through: blkparse prints bytes (Q I D B) or the command bytes (I D B C).
    is_pc = ((cat & TC_PC) != 0) & np.isin(letter, _indices(_PC_SHAPES))
    is_plus &= ~is_pc
    is_cr &= ~is_pc
    return {
        "plus": is_plus,
        "completion": is_cr,
        "split": is_x,
        "sector": is_plus | is_cr | is_x,
        "depth": np.isin(letter, _indices(_UNPLUG)),
        "remap": letter == _LETTER_INDEX["A"],
        "pc": is_pc,
        "pc_bytes": is_pc & np.isin(letter, _indices({"Q", "I", "D", "B"})),
    }


def _events_table(
    files: Sequence[RecordFile],
    r: np.ndarray,
    letter: np.ndarray,
    file_idx: np.ndarray,
    rec_idx: np.ndarray,
    base: int,
    comms: dict[int, str],
    messages: pa.Array | None,
    input_ids: np.ndarray,
    first_row: int,
) -> pa.Table:
    n = len(r)
    action = r["action"].astype(np.int64)
    cat = action >> CATEGORY_SHIFT
    nbytes = r["bytes"].astype(np.int64)
    rwbs = np.where(letter == _M_INDEX, 3 << 1, _rwbs_codes(cat, nbytes))
    sector = r["sector"].astype(np.int64)
    printed = _printed_fields(letter, cat, nbytes)
    is_plus, is_cr, is_x = printed["plus"], printed["completion"], printed["split"]
    is_u, is_a, is_pc, is_pc_bytes = (
        printed["depth"],
        printed["remap"],
        printed["pc"],
        printed["pc_bytes"],
    )
    has_sector = printed["sector"]
    skip = np.where(action & TA_CGROUP, 8, 0)
    pdu_rows = np.flatnonzero((is_x | is_u | is_a) & (r["pdu_len"] >= skip + 8))
    pdu64 = np.zeros(n, dtype=np.uint64)
    pdu64[pdu_rows] = be64_payload(files, file_idx[pdu_rows], rec_idx[pdu_rows], skip[pdu_rows])
    pid = r["pid"].astype(np.int64)
    seq = r["sequence"].astype(np.int64)
    is_m = letter == _M_INDEX
    # blkparse prints messages with sequence and pid 0, whatever the record holds.
    pid[is_m] = 0
    seq[is_m] = 0
    has_comm = ~np.isin(letter, _indices(_NO_COMM))
    dev = r["device"].astype(np.int64)
    remap = remap_columns(files, file_idx, rec_idx, is_a, skip)
    cg_rows = np.flatnonzero(is_m & ((action & TA_CGROUP) != 0) & (r["pdu_len"] >= 8))
    # A damaged record's unsigned fields would wrap into wrong numbers: refuse them instead.
    for name, values, where, largest in (
        ("cpu", r["cpu"], None, INT32_MAX),
        ("sector", r["sector"], has_sector, INT64_MAX),
        ("split sector", pdu64, is_x, INT64_MAX),
        ("depth", pdu64 & np.uint64(0xFFFFFFFF), is_u, INT32_MAX),
        ("remap sector", remap_payloads(files, file_idx, rec_idx, is_a, skip)[1], is_a, INT64_MAX),
    ):
        refuse_out_of_range(files, file_idx, rec_idx, name, values, where, largest)
    pc_hex_rows = np.flatnonzero(is_pc & np.isin(letter, _indices({"I", "D", "B", "C"})))
    return events_table(
        n,
        {
            "dev_major": pa.array(dev >> DEV_MINOR_BITS, pa.int32()),
            "dev_minor": pa.array(dev & DEV_MINOR_MASK, pa.int32()),
            "cpu": pa.array(r["cpu"], pa.int32()),
            "seq": pa.array(seq, pa.int64()),
            "time_ns": pa.array(r["time"].astype(np.int64) - base, pa.int64()),
            "pid": pa.array(pid, pa.int64()),
            "action": _ACTION_STRINGS.take(pa.array(letter)),
            **rwbs_columns(rwbs),
            "sector": _masked(sector, has_sector, pa.int64()),
            "nsectors": _masked(nbytes >> 9, is_plus | is_cr, pa.int32()),
            "split_sector": _masked(pdu64.astype(np.int64), is_x, pa.int64()),
            **dict(zip(("remap_dev_major", "remap_dev_minor", "remap_sector"), remap, strict=True)),
            "error": _masked(
                r["error"].astype(np.int32), is_cr | (is_pc & ~is_pc_bytes), pa.int32()
            ),
            **dict(zip(("comm", "comm_raw"), comm_arrays(pid, has_comm, comms), strict=True)),
            "depth": _masked((pdu64 & 0xFFFFFFFF).astype(np.int64), is_u, pa.int32()),
            **({"message": messages} if messages is not None else {}),
            "pc_bytes": _masked(nbytes, is_pc_bytes, pa.int64()),
            **(
                {"pdu": pc_payload_hex(files, file_idx, rec_idx, pc_hex_rows, n)}
                if len(pc_hex_rows)
                else {}
            ),
            **(
                {"cgroup": cgroup_column(files, file_idx, rec_idx, cg_rows, n)}
                if len(cg_rows)
                else {}
            ),
            "source": constant_strings("blktrace", n),
            # The line blkparse prints the event on, and one input id for the whole trace: the
            # analysis orders ties by (input_id, line_no), which must be blkparse's print order.
            "line_no": pa.array(np.arange(first_row + 1, first_row + n + 1), pa.int64()),
            "input_id": pa.array(np.full(n, input_ids[0]), pa.int16()),
        },
    )
