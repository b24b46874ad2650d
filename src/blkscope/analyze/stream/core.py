"""The streaming pass's event loop: each event, in time order, goes to the tables it matters to."""

from __future__ import annotations

import numpy as np

from blkscope.analyze.stream.bios import _lost, emit_bio, finalize_piece, new_bio, new_piece
from blkscope.analyze.stream.iodist import count_io
from blkscope.analyze.stream.jit import entry_kernel, inline_kernel, kernel
from blkscope.analyze.stream.keyed import (
    crowded,
    tab_clear,
    tab_find,
    tab_get,
    tab_pop,
    tab_put,
    tab_remove,
    tab_slot,
)
from blkscope.analyze.stream.layout import (
    A_A,
    A_C,
    A_D,
    A_F,
    A_G,
    A_I,
    A_M,
    A_P,
    A_Q,
    A_R,
    A_U,
    A_UT,
    A_X,
    BI_BIO_C,
    BI_FE_T,
    BI_NEXT,
    BI_PENDING,
    BI_RMAJ,
    BI_RMIN,
    BI_RSEC,
    BI_WAIT,
    CT_BO_N,
    CT_DB_N,
    CT_NOW,
    CT_PLUG,
    CT_RQ_N,
    DV_HAS_D,
    DV_NODES,
    E_ACT,
    E_DEV,
    E_EID,
    E_FLUSH,
    E_NSEC,
    E_OP,
    E_PID,
    E_RMAJ,
    E_RMIN,
    E_RSEC,
    E_SEC,
    E_SPLIT,
    E_T,
    NULL,
    OP_N,
    PC_BIO,
    PC_COV_KEY,
    PC_FINAL,
    PC_GPHASE,
    SS_FIRST_QG,
    W_BIO_C,
    W_NONE,
)
from blkscope.analyze.stream.links import chain_node, cov_dispatch, fifo_d, fifo_g, gid_event, land
from blkscope.analyze.stream.plug import close_idle_sessions, plug_event
from blkscope.analyze.stream.pools import k1
from blkscope.analyze.stream.q2q import q2q_at_q
from blkscope.analyze.stream.requests import _close_run, pair_event, retry_deferred
from blkscope.analyze.stream.state import State

# what `step` does
BATCH, TRACE_END = 1, 2


@entry_kernel
def step(
    S: State, ev: np.ndarray, start: int, stop: int, rq_cap: int, bo_cap: int, what: int
) -> int:
    """The pass's one entry point from Python (each entry point costs start-up in every
    process, and each call the typing of State's ~40 arrays: ~1 ms here). BATCH runs
    ev[start:stop] (see process) and, if it got to stop, settles what the batch's end allows;
    TRACE_END writes everything still in flight. Returns where the events stopped."""
    if what == BATCH:
        i = process(S, ev, start, stop, rq_cap, bo_cap)
        if i == stop:
            close_idle_sessions(S, S.ct[CT_NOW], False)
            retry_deferred(S)
        return i
    finish(S)
    return 0


@inline_kernel
def pools_low(S: State) -> bool:
    return (
        S.grn[0] < 64 or S.kyn[0] < 64 or S.bin_[0] < 64 or S.pcn[0] < 64 or S.ssn[0] < 64
        or S.pdn[0] < 64
    )  # fmt: skip


@kernel
def process(S: State, ev: np.ndarray, start: int, stop: int, rq_cap: int, bo_cap: int) -> int:
    """Run events ev[start:stop] through every table; stop early (returning the next index)
    when an output matrix could overflow or a table needs room."""
    plug = S.ct[CT_PLUG] == 1
    for i in range(start, stop):
        a = ev[i, E_ACT]
        if a == 0:
            continue  # an action the pass ignores (m, S, T, B, ...)
        if (
            S.ct[CT_RQ_N] + (S.gr.shape[0] - S.grn[0]) + 64 > rq_cap
            or S.ct[CT_BO_N] + (S.bi.shape[0] - S.bin_[0]) + 64 > bo_cap
            or tables_crowded(S)
            or pools_low(S)
        ):
            return i
        t = ev[i, E_T]
        if t != S.ct[CT_NOW]:
            S.ct[CT_NOW] = t
            S.ct[CT_DB_N] = 0
        dev = ev[i, E_DEV]
        sec = ev[i, E_SEC]
        eid = ev[i, E_EID]
        count_io(S, a, dev, ev[i, E_OP], sec, ev[i, E_NSEC])
        ksec = sec  # -1 when the event has no sector
        sid = -1
        if plug and (a in (A_Q, A_G, A_P, A_U, A_UT)):
            sid = plug_event(S, ev[i, E_PID], a, t)
        if a == A_Q:
            rm = (NULL, NULL, NULL)
            if sec >= 0:
                s = tab_find(S.d_remap, k1(dev, sec), 0)
                if s >= 0:
                    rm = (S.d_remap[s, 2], S.d_remap[s, 3], S.d_remap[s, 4])
                    tab_remove(S.d_remap, s)
            if ev[i, E_FLUSH] == 1:
                tab_put(S.d_flushq, k1(dev, max(sec, 0)), 0, t)
            chain_node(S, dev, ksec, a)
            b = new_bio(S, ev, i, dev, sid)
            q2q_at_q(S, b, ev, i, dev)
            S.bi[b, BI_RMAJ], S.bi[b, BI_RMIN], S.bi[b, BI_RSEC] = rm
            p = new_piece(S, b)
            if S.dv[dev, DV_NODES] == 0:
                _lost(S, p)  # no G/M/F/X on this device at all (bio-based): nothing can land
            else:
                tab_put(S.d_chain, k1(dev, ksec), 0, p)
            if S.dv[dev, DV_HAS_D] == 0 and sec >= 0 and S.bia[b] == 1:
                ka, kb = k1(dev, sec), ev[i, E_NSEC]
                S.bi[b, BI_NEXT] = tab_get(S.d_biowait, ka, kb, -1)
                tab_put(S.d_biowait, ka, kb, b)
        elif a == A_G:
            gid_event(S, dev, ksec, a, t, eid, -1)
            p, _ = chain_node(S, dev, ksec, a)
            if p >= 0:
                land(S, p, ev, i, a, dev, S.ss[sid, SS_FIRST_QG] if sid >= 0 else NULL)
            if sec < 0:
                fifo_g(S, dev, p)
        elif a in (A_M, A_F):
            p, _ = chain_node(S, dev, ksec, a)
            if p >= 0:
                land(S, p, ev, i, a, dev, NULL)
        elif a == A_X:
            _, w = chain_node(S, dev, ksec, a)
            split = ev[i, E_SPLIT]
            if split >= 0:
                chain_node(S, dev, split, 0)  # the remainder's start node
                if w >= 0:
                    r = new_piece(S, S.pc[w, PC_BIO])
                    tab_put(S.d_chain, k1(dev, split), 0, r)
        elif a == A_I:
            gid_event(S, dev, ksec, a, t, eid, -1)
        elif a == A_A and sec >= 0:
            s = tab_slot(S.d_remap, k1(dev, sec), 0)
            S.d_remap[s, 2] = ev[i, E_RMAJ]
            S.d_remap[s, 3] = ev[i, E_RMIN]
            S.d_remap[s, 4] = ev[i, E_RSEC]
        if a in (A_D, A_R, A_C):
            isflush = ev[i, E_FLUSH] == 1 and ev[i, E_OP] == OP_N
            g = -1
            if sec >= 0 or isflush:
                # (it also marks a C whose request had no D in ev[i, E_DLESS]: stream/depth.py)
                g = pair_event(S, ev, i, a, dev)
            if a == A_D:
                gid_event(S, dev, ksec, a, t, eid, g)
                if sec < 0:
                    fifo_d(S, dev, eid, g)
                else:
                    cov_dispatch(S, dev, eid, sec, ev[i, E_NSEC], g)
            elif a == A_C and sec >= 0 and not isflush:
                if ev[i, E_NSEC] == 0:
                    flush_end(S, dev, sec, t)
                elif S.dv[dev, DV_HAS_D] == 0:
                    bio_done(S, dev, sec, ev[i, E_NSEC], t)
    return stop


@inline_kernel
def tables_crowded(S: State) -> bool:
    return (
        crowded(S.d_keys) or crowded(S.d_groups) or crowded(S.d_chain) or crowded(S.d_gid)
        or crowded(S.d_cov) or crowded(S.d_fifo) or crowded(S.d_flushq)
        or crowded(S.d_lastfe) or crowded(S.d_fewait) or crowded(S.d_remap)
        or crowded(S.d_biowait) or crowded(S.d_pids) or crowded(S.d_q2q)
    )  # fmt: skip


@inline_kernel
def flush_end(S: State, dev: int, sec: int, t: int) -> None:
    """A zero-length C ends a flush sequence: preflush bios on its sector waiting for it end."""
    key = k1(dev, sec)
    tab_put(S.d_lastfe, key, 0, t)
    b = tab_pop(S.d_fewait, key, 0, -1)
    while b >= 0:
        nxt = S.bi[b, BI_NEXT]
        S.bi[b, BI_FE_T] = t
        emit_bio(S, b)
        b = nxt


@inline_kernel
def bio_done(S: State, dev: int, sec: int, nsec: int, t: int) -> None:
    """A C on a bio-based device completes every bio queued on its sector and length."""
    b = tab_pop(S.d_biowait, k1(dev, sec), nsec, -1)
    while b >= 0:
        nxt = S.bi[b, BI_NEXT]
        S.bi[b, BI_NEXT] = -1
        S.bi[b, BI_BIO_C] = t
        if S.bi[b, BI_WAIT] == W_BIO_C:
            S.bi[b, BI_WAIT] = W_NONE
            emit_bio(S, b)
        b = nxt


@kernel
def finish(S: State) -> None:
    """The trace ended: every request, piece and bio still in flight is written as it is."""
    for ks in range(S.ky.shape[0]):
        if S.kya[ks] == 1:
            _close_run(S, ks)
    tab_clear(S.d_chain)
    tab_clear(S.d_gid)
    tab_clear(S.d_cov)
    tab_clear(S.d_fifo)
    tab_clear(S.d_fewait)
    for p in range(S.pc.shape[0]):
        if S.pca[p] == 1 and S.pc[p, PC_FINAL] == 0:
            S.pc[p, PC_GPHASE] = 0
            S.pc[p, PC_COV_KEY] = NULL
            finalize_piece(S, p, -1)
    for b in range(S.bi.shape[0]):
        if S.bia[b] == 1 and S.bi[b, BI_PENDING] == 0:
            S.bi[b, BI_WAIT] = W_NONE
            emit_bio(S, b)
    close_idle_sessions(S, 0, True)
    retry_deferred(S)
