"""Numba kernels that scan blkparse text in bulk.

`scan_lines` parses the common line shapes into columns and marks every other
line for the reference parser in `event_line`; it never guesses.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from blkscope.ingest.blkparse.event_line import ACTIONS
from blkscope.ingest.codes import constant_strings, events_table, rwbs_columns
from blkscope.ingest.rwbs_bits import FUA, META, OP_SHIFT, PREFLUSH, READAHEAD, SYNC
from blkscope.numba_kernels import compiled

# Rows of the int64 output matrix.
F_MAJOR, F_MINOR, F_CPU, F_SEQ, F_TIME, F_PID = 0, 1, 2, 3, 4, 5
F_SECTOR, F_NSECT, F_SPLIT, F_ERROR, F_DEPTH = 6, 7, 8, 9, 10
F_COMM_START, F_COMM_END, F_LINE = 11, 12, 13
N_FIELDS = 14

# Action codes, in event_line.ACTIONS order.
A_Q, A_G, A_I, A_D, A_C, A_M, A_F, A_P, A_U, A_UT, A_X, A_A, A_R, A_S, A_T, A_B, A_m = range(17)

# Bits of the per-row validity byte: which optional columns the line printed.
HAS_SECTOR, HAS_NSECT, HAS_SPLIT, HAS_ERROR, HAS_DEPTH, HAS_COMM = 1, 2, 4, 8, 16, 32

# Range checks: a number that may not fit its column goes to the reference parser, which says
# so with its line (_canon keeps every number within 18 digits; int32 columns need more).
INT32_MAX = 2**31 - 1
MAX_SECONDS = 9_223_372_035  # seconds * 1e9 + ns must fit int64
# No line the scanner parses is shorter: it sizes its output by this.
MIN_FAST_LINE = 16


@compiled
def _uint(buf, p, e):  # type: ignore[no-untyped-def]
    v = 0
    q = p
    while q < e and 48 <= buf[q] <= 57:
        v = v * 10 + (buf[q] - 48)
        q += 1
    return v, q, q - p


@compiled
def _spaces(buf, p, e):  # type: ignore[no-untyped-def]
    while p < e and buf[p] == 32:
        p += 1
    return p


_ACTION_OF_BYTE = np.full(256, -1, dtype=np.int64)
for _letter, _code in zip(
    "QGIDCMFPUXARSTBm",
    (A_Q, A_G, A_I, A_D, A_C, A_M, A_F, A_P, A_U, A_X, A_A, A_R, A_S, A_T, A_B, A_m),
    strict=False,
):
    _ACTION_OF_BYTE[ord(_letter)] = _code


@compiled
def _action(buf, p, e):  # type: ignore[no-untyped-def]
    if p + 1 < e and buf[p + 1] != 32:
        if buf[p] == 85 and buf[p + 1] == 84 and (p + 2 >= e or buf[p + 2] == 32):  # UT
            return A_UT, p + 2
        return -1, p
    return _ACTION_OF_BYTE[buf[p]], p + 1


@compiled
def _rwbs(buf, p, e):  # type: ignore[no-untyped-def]
    code = 0
    if p < e and buf[p] == 70 and p + 1 < e and buf[p + 1] in (68, 87, 82, 78):
        code |= PREFLUSH
        p += 1
    if p >= e:
        return -1, p
    c = buf[p]
    if c == 82:
        op = 0
    elif c == 87:
        op = 1
    elif c == 68:
        op = 2
    elif c == 78:
        op = 3
    else:
        return -1, p
    code |= op << OP_SHIFT
    p += 1
    if p < e and buf[p] == 70:  # F: fua
        code |= FUA
        p += 1
    if p < e and buf[p] == 65:  # A: readahead
        code |= READAHEAD
        p += 1
    if p < e and buf[p] == 83:  # S: sync
        code |= SYNC
        p += 1
    if p < e and buf[p] == 77:  # M: meta
        code |= META
        p += 1
    if p >= e or buf[p] != 32:
        return -1, p
    return code, p


@compiled
def _plain_comm(buf, s, e):  # type: ignore[no-untyped-def]
    for q in range(s, e):
        b = buf[q]
        if b < 32 or b >= 127:
            return False
    return True


@compiled
def _canon(buf, p, nd):  # type: ignore[no-untyped-def]
    """True when nd digits at p are a number as printf prints it (no leading 0, fits int64)."""
    return 0 < nd <= 18 and (nd == 1 or buf[p] != 48)


@compiled
def _pad(nd, width):  # type: ignore[no-untyped-def]
    """Spaces printf puts before a right-aligned field of nd characters in `width`."""
    return width - nd if nd < width else 0


@compiled
def _field(buf, p, n, gap, width):  # type: ignore[no-untyped-def]
    """Read a number after `gap` spaces plus its %{width}d padding; -1 digits when not exact."""
    q = _spaces(buf, p, n)
    v, e, nd = _uint(buf, q, n)
    if not _canon(buf, q, nd) or q - p != gap + _pad(nd, width):
        return 0, e, -1
    return v, e, nd


@compiled
def _header(buf, p, n, ints, r):  # type: ignore[no-untyped-def]
    """Parse the seven header fields from p; return (action code or -1, rwbs code, position).

    Only lines spaced exactly as blkparse's "%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s " prints
    them are taken here, so that rendering the row gives the line back; others (copied from a
    terminal, tabs, a lost leading space) go to the reference parser, which keeps their bytes.
    """
    v, p, nd = _field(buf, p, n, 0, 3)
    if nd < 0 or p >= n or buf[p] != 44 or v > INT32_MAX:
        return -1, 0, p
    ints[F_MAJOR, r] = v
    q = p + 1
    v, p, nd = _uint(buf, q, n)
    if not _canon(buf, q, nd) or p >= n or buf[p] != 32 or v > INT32_MAX:
        return -1, 0, p
    ints[F_MINOR, r] = v
    v, p, nd_cpu = _field(buf, p, n, _pad(nd, 3) + 1, 2)
    if nd_cpu < 0 or p >= n or buf[p] != 32 or v > INT32_MAX:
        return -1, 0, p
    ints[F_CPU, r] = v
    v, p, nd = _field(buf, p, n, 1, 8)
    if nd < 0 or p >= n or buf[p] != 32:
        return -1, 0, p
    ints[F_SEQ, r] = v
    v, p, nd = _field(buf, p, n, 1, 5)
    if nd < 0 or p >= n or buf[p] != 46 or v > MAX_SECONDS:
        return -1, 0, p
    v2, p, nd = _uint(buf, p + 1, n)
    if nd != 9 or p >= n or buf[p] != 32:
        return -1, 0, p
    ints[F_TIME, r] = v * 1000000000 + v2
    v, p, nd = _field(buf, p, n, 1, 5)
    if nd < 0 or p >= n or buf[p] != 32:
        return -1, 0, p
    ints[F_PID, r] = v
    q = _spaces(buf, p, n)
    if q >= n or buf[q] == 10:
        return -1, 0, q
    a, e = _action(buf, q, n)
    if a < 0 or a in (A_A, A_m) or e >= n or buf[e] != 32 or q - p != 1 + _pad(e - q, 2):
        return -1, 0, e
    p = _spaces(buf, e, n)
    code, end = _rwbs(buf, p, n)
    if code < 0 or p - e != 1 + _pad(end - p, 3):
        return -1, 0, end
    return a, code, end + 1  # past the single space blkparse prints after RWBS


@compiled
def _num(buf, p, e):  # type: ignore[no-untyped-def]
    """A number at p as printf prints it: (value, end, ok)."""
    v, q, nd = _uint(buf, p, e)
    return v, q, _canon(buf, p, nd)


@compiled
def _tail(buf, p, e, a, ints, r):  # type: ignore[no-untyped-def]
    """Parse what follows the RWBS; return the validity bits, or -1 for the slow path."""
    if a in (A_C, A_R):
        v, p, ok = _num(buf, p, e)
        if not ok:
            return -1
        ints[F_SECTOR, r] = v
        ints[F_NSECT, r] = 0
        if p + 3 < e and buf[p] == 32 and buf[p + 1] == 43 and buf[p + 2] == 32:
            v, p, ok = _num(buf, p + 3, e)
            if not ok or v == 0 or v > INT32_MAX:  # blkparse prints no '+ 0' on a completion
                return -1
            ints[F_NSECT, r] = v
        if p + 1 >= e or buf[p] != 32 or buf[p + 1] != 91 or buf[e - 1] != 93:
            return -1
        p += 2
        neg = False
        if buf[p] == 45:
            neg = True
            p += 1
        v, p, ok = _num(buf, p, e)
        if not ok or p != e - 1 or (neg and v == 0) or v > INT32_MAX:
            return -1
        ints[F_ERROR, r] = -v if neg else v
        return HAS_SECTOR | HAS_NSECT | HAS_ERROR
    if a in (A_U, A_UT, A_T):
        q = e - 1
        while q > p and 48 <= buf[q] <= 57:
            q -= 1
        if q == e - 1 or buf[q] != 32 or buf[q - 1] != 93 or buf[p] != 91:
            return -1
        v, _q, ok = _num(buf, q + 1, e)
        if not ok or v > INT32_MAX or q - 1 < p + 1 or not _plain_comm(buf, p + 1, q - 1):
            return -1
        ints[F_DEPTH, r] = v
        ints[F_COMM_START, r] = p + 1
        ints[F_COMM_END, r] = q - 1
        return HAS_DEPTH | HAS_COMM
    bits = HAS_COMM
    if a == A_X:
        v, p, ok = _num(buf, p, e)
        if not ok or p + 3 >= e or buf[p] != 32 or buf[p + 1] != 47 or buf[p + 2] != 32:
            return -1
        ints[F_SECTOR, r] = v
        v, p, ok = _num(buf, p + 3, e)
        if not ok:
            return -1
        ints[F_SPLIT, r] = v
        p += 1
        bits |= HAS_SECTOR | HAS_SPLIT
    elif a != A_P and buf[p] != 91:
        v, p, ok = _num(buf, p, e)
        if not ok or p + 3 >= e or buf[p] != 32 or buf[p + 1] != 43 or buf[p + 2] != 32:
            return -1
        ints[F_SECTOR, r] = v
        v, p, ok = _num(buf, p + 3, e)
        if not ok or v > INT32_MAX or p >= e or buf[p] != 32:
            return -1
        ints[F_NSECT, r] = v
        p += 1
        bits |= HAS_SECTOR | HAS_NSECT
    # "[comm]" runs to the last ']' of the line.
    if p >= e or buf[p] != 91 or buf[e - 1] != 93 or e - 1 < p + 1:
        return -1
    if not _plain_comm(buf, p + 1, e - 1):
        return -1
    ints[F_COMM_START, r] = p + 1
    ints[F_COMM_END, r] = e - 1
    return bits


@compiled
def _blank(buf, s, e):  # type: ignore[no-untyped-def]
    """True when buf[s:e] holds only spaces, tabs and CRs."""
    q = s
    while q < e and (buf[q] == 32 or buf[q] == 9 or buf[q] == 13):
        q += 1
    return q == e


@compiled
def scan_lines(buf, n, ints, action, rwbs, valid, slow):  # type: ignore[no-untyped-def]
    """Parse lines of buf[:n] into compact columns; return (lines, fast rows, slow lines).

    Fast rows fill ints[:, :fast] in line order; every other line goes to slow[:, :n_slow]
    as (line index, start, end) for the reference parser.
    """
    i = 0
    line = 0
    fast = 0
    n_slow = 0
    last_blank = False  # whether slow span n_slow - 1 holds blank lines only
    while i < n:
        s = i
        r = fast
        ints[F_COMM_START, r] = 0
        ints[F_COMM_END, r] = 0
        a, code, p = _header(buf, s, n, ints, r)
        # Header fields never span a newline, so the line end is found from where parsing stopped.
        e = min(p, n)
        while e < n and buf[e] != 10:
            e += 1
        i = e + 1
        bits = -1
        if a >= 0 and p < e:
            bits = _tail(buf, p, e, a, ints, r)
        if bits >= 0:
            action[r] = a
            rwbs[r] = code
            valid[r] = bits
            ints[F_LINE, r] = line
            fast += 1
        elif last_blank and slow[2, n_slow - 1] == s - 1 and _blank(buf, s, e):
            slow[2, n_slow - 1] = e  # one more blank line in a run of them
        else:
            slow[0, n_slow] = line
            slow[1, n_slow] = s
            slow[2, n_slow] = e
            n_slow += 1
            last_blank = _blank(buf, s, e)
        line += 1
    return line, fast, n_slow


@compiled
def gather_spans(buf, starts, ends, offsets, out):  # type: ignore[no-untyped-def]
    """Copy buf[starts[k]:ends[k]] back to back into out; fill Arrow offsets."""
    pos = 0
    offsets[0] = 0
    for k in range(starts.shape[0]):
        for q in range(starts[k], ends[k]):
            out[pos] = buf[q]
            pos += 1
        offsets[k + 1] = pos
    return pos


def alloc(nlines: int, nbytes: int) -> tuple[np.ndarray, ...]:
    """Allocate scan outputs for nlines lines in nbytes: ints, action, rwbs, valid, slow.

    Sized by what can occur, not by lines: fast rows are at least MIN_FAST_LINE bytes, and a
    slow span is a non-blank line (2 bytes at least) or a run of blank ones between two.
    """
    fast = min(nlines, nbytes // MIN_FAST_LINE) + 1
    slow = min(nlines, nbytes // 2 + 1) + 1
    return (
        np.empty((N_FIELDS, fast), dtype=np.int64),
        np.empty(fast, dtype=np.int8),
        np.empty(fast, dtype=np.int16),
        np.empty(fast, dtype=np.uint8),
        np.empty((3, slow), dtype=np.int32),  # chunks are far below 2 GiB
    )


# The numba scanner as text_stream used it before the compiled core (blkscope._core) took over:
# kept, with nothing in the package calling it, for the differential test against the core
# (tests/test_ingest_differential.py) until numba leaves the package.
_ACTION_STRINGS = pa.array(ACTIONS, pa.string())


def scan_chunk(data: bytes, first: int, input_id: int) -> tuple[pa.Table, np.ndarray, int]:
    """(fast rows, (line number, start, end) of each slow span, lines) of a chunk whose first
    line is line `first`."""
    nlines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    buf = np.frombuffer(data, dtype=np.uint8)
    ints, action, rwbs, valid, slow = alloc(nlines, len(data))
    lines, fast, n_slow = scan_lines(buf, len(buf), ints, action, rwbs, valid, slow)
    table = _fast_table(buf, ints, action[:fast], rwbs[:fast], valid[:fast], first, input_id)
    spans = slow[:, :n_slow].astype(np.int64)
    spans[0] += first
    return table, spans, lines


def _masked(values: np.ndarray, valid: np.ndarray, type_: pa.DataType) -> pa.Array:
    if valid.all():
        return pa.array(values, type_)
    return pa.array(values, type_, mask=~valid)


def _fast_table(
    buf: np.ndarray,
    ints: np.ndarray,
    action: np.ndarray,
    code: np.ndarray,
    valid: np.ndarray,
    first_line_no: int,
    input_id: int,
) -> pa.Table:
    m = len(action)
    cols = ints[:, :m]
    starts, ends = cols[F_COMM_START], cols[F_COMM_END]
    offsets = np.empty(m + 1, dtype=np.int32)
    data = np.empty(int((ends - starts).sum()), dtype=np.uint8)
    gather_spans(buf, starts, ends, offsets, data)
    has_comm = (valid & HAS_COMM) != 0
    comm = pa.StringArray.from_buffers(
        m,
        pa.py_buffer(offsets),
        pa.py_buffer(data),
        null_bitmap=pa.array(has_comm).buffers()[1],
        null_count=m - int(has_comm.sum()),
    )

    def opt(field: int, bit: int, type_: pa.DataType) -> pa.Array:
        return _masked(cols[field], (valid & bit) != 0, type_)

    return events_table(
        m,
        {
            "dev_major": pa.array(cols[F_MAJOR], pa.int32()),
            "dev_minor": pa.array(cols[F_MINOR], pa.int32()),
            "cpu": pa.array(cols[F_CPU], pa.int32()),
            "seq": pa.array(cols[F_SEQ]),
            "time_ns": pa.array(cols[F_TIME]),
            "pid": pa.array(cols[F_PID]),
            "action": _ACTION_STRINGS.take(pa.array(action)),
            **rwbs_columns(code),
            "sector": opt(F_SECTOR, HAS_SECTOR, pa.int64()),
            "nsectors": opt(F_NSECT, HAS_NSECT, pa.int32()),
            "split_sector": opt(F_SPLIT, HAS_SPLIT, pa.int64()),
            "error": opt(F_ERROR, HAS_ERROR, pa.int32()),
            "comm": comm,
            "depth": opt(F_DEPTH, HAS_DEPTH, pa.int32()),
            "source": constant_strings("blkparse", m),
            "line_no": pa.array(cols[F_LINE] + first_line_no),
            "input_id": pa.array(np.full(m, input_id, dtype=np.int16)),
        },
    )
