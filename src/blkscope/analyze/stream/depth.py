"""The in-flight step functions (the `depth` and `depth_bins` tables), walked by the streaming
pass instead of a window over every step: per device and level, steps in time order, each
moment's steps applied -1 before 0 before +1 (sql/_depth_build.sql says what counts).

The walk keeps, per (device, level) key, only the moment it is at (its counts of -1, 0 and +1
steps) and sums: time held per depth, and per time bin the highest depth held, the sum of
depth * ns and the traced ns. Memory follows the depth range and the bins, not the trace.

One thing is not known while walking: whether a C whose request had no D ends a request that
was in flight since the trace start (+1 from t0 until that C) or is an orphan (left out), which
stream/run.py settles after the pass. Such a C ("boundary") is left out of the walk and starts
a new segment of the key's sums; after the verdict each segment is shifted by the number of
counted boundaries after it (sums of depth * ns shift exactly: + c * ns), and the moments where
the shift changes are replayed from their counts (depth_tables.py). A bio's completion reaches
the walk when its row is written, at its C's time, except at the trace end, where a bio still
waiting for the end of its flush sequence is written with its own C's (earlier) time: steps at
or after the earliest such time wait (`horizon`) until the pass knows."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from blkscope.analyze.stream.jit import inline_kernel, kernel
from blkscope.analyze.stream.layout import (
    A_C,
    A_D,
    A_Q,
    A_R,
    BI_BIO_C,
    BI_C_T,
    BI_FE_T,
    BI_PENDING,
    E_ACT,
    E_DEV,
    E_DLESS,
    E_EID,
    E_FLUSH,
    E_NSEC,
    E_OP,
    E_SEC,
    E_T,
    NULL,
    OP_N,
)
from blkscope.analyze.stream.pools import nmax

BIG = 9223372036854775807
# ---- per key (KK): the open moment, the depth before it, the segment's visited range, bins ----
(K_T, K_M, K_Z, K_P, K_NB, K_D, K_SEG, K_VMIN, K_VMAX, K_FIRST, K_T1, K_START, K_WIDTH,
 K_BINS, K_ENDED) = range(15)  # fmt: skip
K_FIELDS = 15
# ---- pending steps (PE): time, key, what ----
P_T, P_K, P_WHAT, P_EID = range(4)
P_FIELDS = 4
S_BOUNDARY, S_NO_C = 2, 3  # what: -1, 0, +1, a boundary C, a D-less C without a length
# ---- output rows (OUT): what a finished segment or a special moment leaves ----
(O_KIND, O_K, O_SEG, O_A, O_B, O_C, O_D, O_E, O_F) = range(9)  # fmt: skip
O_FIELDS = 9
# kinds: held ns at a depth (depth, ns); a bin's sums (bin, max depth, depth*ns, ns); the
# visited range (lo, hi); a moment the shift changes at (t, depth before, -1s, 0s, +1s, first);
# a boundary C (t, eid); a D-less C without a length (eid)
OK_HELD, OK_BIN, OK_VISIT, OK_MOMENT, OK_BOUNDARY, OK_NO_C = range(1, 7)
# ---- counters (CT) ----
C_OUT_N, C_PEND_N, C_OFF = range(3)
C_FIELDS = 3
# what walk() stopped for
W_DONE, W_ROOM, W_LATE = range(3)
# what depth_step does (bits): queue a batch's steps, walk to the horizon, walk everything,
# end every key
DO_COLLECT, DO_WALK, DO_WALK_ALL, DO_END = 1, 2, 4, 8


class DepthState(NamedTuple):
    """The walk's arrays (Python owns and grows them between calls)."""

    kk: np.ndarray  # (keys, K_FIELDS)
    held: np.ndarray  # (keys, depths): ns held at depth index - ct[C_OFF], this segment
    bins: np.ndarray  # (keys, bins, 3): max depth, sum depth * ns, ns per bin, this segment
    out: np.ndarray  # (rows, O_FIELDS)
    pend: np.ndarray  # (rows, P_FIELDS)
    ct: np.ndarray  # (C_FIELDS,)


def _visit_range(d: int, m: int, z: int, p: int) -> tuple[int, int]:
    """The depths a moment visits from depth d with m -1s, z 0s and p +1s, in that order:
    d-1 .. d-m, then d-m (a 0), then d-m+1 .. d-m+p (lo > hi: none)."""
    lo = d - m if (m > 0 or z > 0) else d + 1
    hi = -BIG
    if m > 0:
        hi = d - 1
    if z > 0:
        hi = max(hi, d - m)
    if p > 0:
        hi = max(hi, d - m + p)
    return lo, hi


visit_range = _visit_range  # Python's (depth_run.py settles the boundaries with it)
_visit_range_jit = inline_kernel(_visit_range)


@inline_kernel
def _push(W: DepthState, t: int, k: int, what: int, eid: int) -> None:
    n = W.ct[C_PEND_N]
    W.pend[n, P_T] = t
    W.pend[n, P_K] = k
    W.pend[n, P_WHAT] = what
    W.pend[n, P_EID] = eid
    W.ct[C_PEND_N] = n + 1


@kernel
def collect(
    W: DepthState, ev: np.ndarray, n: int, has_d: np.ndarray, done: np.ndarray, ndone: int
) -> None:
    """Queue a batch's steps in time order: from its events (driver: D +1, R -1, C -1; queue:
    Q +1) and from the bios written meanwhile (done: (time, key) of each completion, sorted)."""
    j = 0
    for i in range(n):
        t = ev[i, E_T]
        while j < ndone and done[j, 0] <= t:
            _push(W, done[j, 0], done[j, 1], -1, 0)
            j += 1
        a = ev[i, E_ACT]
        dev = ev[i, E_DEV]
        if a == A_Q:
            _push(W, t, 2 * dev + 1, 1, 0)
            continue
        if a != A_D and a != A_R and a != A_C:
            continue
        isflush = ev[i, E_FLUSH] == 1 and ev[i, E_OP] == OP_N
        if ev[i, E_SEC] < 0 and not isflush:
            continue  # not a request's event (_request_events)
        if a == A_D:
            _push(W, t, 2 * dev, 1, 0)
        elif a == A_R:
            _push(W, t, 2 * dev, -1, 0)
        elif isflush or (ev[i, E_NSEC] > 0 and has_d[dev] == 1):
            # (a zero-length C ends a flush sequence; on a device without D it is a bio's)
            if ev[i, E_DLESS] == 1:
                _push(W, t, 2 * dev, S_BOUNDARY, ev[i, E_EID])
            else:
                _push(W, t, 2 * dev, -1, 0)
        elif ev[i, E_NSEC] < 0 and has_d[dev] == 1 and ev[i, E_DLESS] == 1:
            _push(W, t, 2 * dev, S_NO_C, ev[i, E_EID])  # no length: not a step, but its +1
    while j < ndone:
        _push(W, done[j, 0], done[j, 1], -1, 0)
        j += 1


@inline_kernel
def horizon(bi: np.ndarray, alive: np.ndarray) -> int:
    """The earliest time a bio still waiting (all its pieces settled) could be written with:
    no step at or after it is walked before the pass knows."""
    h = BIG
    for b in range(bi.shape[0]):
        if alive[b] == 1 and bi[b, BI_PENDING] == 0:
            c = bi[b, BI_BIO_C] if bi[b, BI_BIO_C] != NULL else bi[b, BI_C_T]
            c = nmax(c, bi[b, BI_FE_T])
            if c != NULL:
                h = min(h, c)
    return h


@inline_kernel
def _out(W: DepthState, kind: int, k: int, seg: int) -> int:
    n = W.ct[C_OUT_N]
    W.ct[C_OUT_N] = n + 1
    W.out[n, O_KIND] = kind
    W.out[n, O_K] = k
    W.out[n, O_SEG] = seg
    return n


@kernel
def snapshot(W: DepthState, k: int) -> None:
    """Write key k's segment sums as output rows and start the next segment from zero."""
    kk, seg, off = W.kk, W.kk[k, K_SEG], W.ct[C_OFF]
    for x in range(W.held.shape[1]):
        if W.held[k, x] != 0:
            r = _out(W, OK_HELD, k, seg)
            W.out[r, O_A] = x - off
            W.out[r, O_B] = W.held[k, x]
            W.held[k, x] = 0
    for b in range(kk[k, K_BINS]):
        if W.bins[k, b, 2] != 0:
            r = _out(W, OK_BIN, k, seg)
            W.out[r, O_A] = b
            W.out[r, O_B] = W.bins[k, b, 0]
            W.out[r, O_C] = W.bins[k, b, 1]
            W.out[r, O_D] = W.bins[k, b, 2]
            W.bins[k, b, 0] = NULL
            W.bins[k, b, 1] = 0
            W.bins[k, b, 2] = 0
    if kk[k, K_VMIN] <= kk[k, K_VMAX]:
        r = _out(W, OK_VISIT, k, seg)
        W.out[r, O_A] = kk[k, K_VMIN]
        W.out[r, O_B] = kk[k, K_VMAX]
    kk[k, K_VMIN] = BIG
    kk[k, K_VMAX] = -BIG


@inline_kernel
def _hold(W: DepthState, k: int, depth: int, a: int, b: int) -> None:
    """Depth held over [a, b): into the depth sums and each time bin it touches (the last bin
    ends at the trace end: _depth_bins_build.sql)."""
    kk = W.kk
    W.held[k, depth + W.ct[C_OFF]] += b - a
    start, width = kk[k, K_START], kk[k, K_WIDTH]
    last = min((b - 1 - start) // width, kk[k, K_BINS] - 1)
    for x in range((a - start) // width, last + 1):
        ns = min(b, start + (x + 1) * width) - max(a, start + x * width)
        if W.bins[k, x, 0] == NULL or depth > W.bins[k, x, 0]:
            W.bins[k, x, 0] = depth
        W.bins[k, x, 1] += depth * ns
        W.bins[k, x, 2] += ns


@kernel
def close_moment(W: DepthState, k: int, t_next: int) -> None:
    """Apply key k's open moment and hold its last depth until t_next."""
    kk = W.kk
    t, d = kk[k, K_T], kk[k, K_D]
    m, z, p = kk[k, K_M], kk[k, K_Z], kk[k, K_P]
    if kk[k, K_FIRST] == 1 or kk[k, K_NB] > 0:
        if kk[k, K_FIRST] == 0:
            snapshot(W, k)  # the boundaries' shift changes here
            kk[k, K_SEG] += 1
        r = _out(W, OK_MOMENT, k, kk[k, K_SEG])
        W.out[r, O_A] = t
        W.out[r, O_B] = d
        W.out[r, O_C] = m
        W.out[r, O_D] = z
        W.out[r, O_E] = p
        W.out[r, O_F] = kk[k, K_FIRST]
    else:
        lo, hi = _visit_range_jit(d, m, z, p)
        kk[k, K_VMIN] = min(kk[k, K_VMIN], lo)
        kk[k, K_VMAX] = max(kk[k, K_VMAX], hi)
    d = d - m + p
    if t_next > t:
        _hold(W, k, d, t, t_next)
    kk[k, K_D] = d
    kk[k, K_M] = 0
    kk[k, K_Z] = 0
    kk[k, K_P] = 0
    kk[k, K_NB] = 0
    kk[k, K_FIRST] = 0
    kk[k, K_T] = t_next


@inline_kernel
def _room(W: DepthState, k: int) -> bool:
    """Room for closing key k's moment: its depth index in `held`, its output rows."""
    kk = W.kk
    x = kk[k, K_D] - kk[k, K_M] + kk[k, K_P] + W.ct[C_OFF]
    rows = W.held.shape[1] + W.bins.shape[1] + 4 + kk[k, K_NB]
    return 0 <= x < W.held.shape[1] and W.ct[C_OUT_N] + rows <= W.out.shape[0]


@kernel
def walk(W: DepthState, until: int) -> int:
    """Walk the pending steps before time `until`; keep the rest pending. Stops early when
    `held` or `out` needs room (W_ROOM) or a step comes before its key's moment (W_LATE)."""
    pend, kk = W.pend, W.kk
    n = W.ct[C_PEND_N]
    i = 0
    code = W_DONE
    while i < n:
        t, k, what = pend[i, P_T], pend[i, P_K], pend[i, P_WHAT]
        if t >= until:
            break
        if W.ct[C_OUT_N] + 2 > W.out.shape[0]:
            code = W_ROOM
            break
        if t > kk[k, K_T]:
            if not _room(W, k):
                code = W_ROOM
                break
            close_moment(W, k, t)
        elif t < kk[k, K_T]:
            code = W_LATE
            break
        if what == -1:
            kk[k, K_M] += 1
        elif what == 0:
            kk[k, K_Z] += 1
        elif what == 1:
            kk[k, K_P] += 1
        else:
            r = _out(W, OK_BOUNDARY if what == S_BOUNDARY else OK_NO_C, k, 0)
            W.out[r, O_A] = t
            W.out[r, O_B] = pend[i, P_EID]
            if what == S_BOUNDARY:
                kk[k, K_NB] += 1
        i += 1
    for j in range(i, n):  # a loop: a slice copy would allocate
        for c in range(P_FIELDS):
            pend[j - i, c] = pend[j, c]
    W.ct[C_PEND_N] = n - i
    return code


@kernel
def depth_step(
    W: DepthState,
    ev: np.ndarray,
    n: int,
    has_d: np.ndarray,
    done: np.ndarray,
    ndone: int,
    bi: np.ndarray,
    alive: np.ndarray,
    what: int,
) -> int:
    """The walk's one entry point from Python (each costs start-up in every process): the
    DO_* bits of `what`, in their order. DO_END holds each key's last moment until its
    device's last event and writes its last segment. Returns W_DONE, or why it stopped
    (W_ROOM: call again with the same bits but DO_COLLECT once Python made room)."""
    if what & DO_COLLECT:
        collect(W, ev, n, has_d, done, ndone)
    if what & (DO_WALK | DO_WALK_ALL):
        code = walk(W, BIG if what & DO_WALK_ALL else horizon(bi, alive))
        if code != W_DONE:
            return code
    if what & DO_END:
        for k in range(W.kk.shape[0]):
            if W.kk[k, K_ENDED] == 0:
                if not _room(W, k):
                    return W_ROOM
                close_moment(W, k, max(W.kk[k, K_T1], W.kk[k, K_T]))
                snapshot(W, k)
                W.kk[k, K_ENDED] = 1
    return W_DONE
