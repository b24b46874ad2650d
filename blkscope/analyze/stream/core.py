"""The streaming pass's event loop: each event, in time order, goes to the tables it matters to."""

from __future__ import annotations

import numba
import numpy as np

from blkscope.analyze.stream.bios import _lost, emit_bio, finalize_piece, new_bio, new_piece
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
from blkscope.analyze.stream.pools import dget, dpop, k1
from blkscope.analyze.stream.requests import _close_run, pair_event, retry_deferred
from blkscope.analyze.stream.state import State


@numba.njit(cache=True)
def process(S: State, ev: np.ndarray, start: int, rq_cap: int, bo_cap: int) -> int:
    """Run events ev[start:] through every table; stop early (returning the next index) when
    an output matrix could overflow."""
    n = ev.shape[0]
    plug = S.ct[CT_PLUG] == 1
    for i in range(start, n):
        if (
            S.ct[CT_RQ_N] + (S.gr.shape[0] - S.grn[0]) + 64 > rq_cap
            or S.ct[CT_BO_N] + (S.bi.shape[0] - S.bin_[0]) + 64 > bo_cap
        ):
            return i
        t = ev[i, E_T]
        if t != S.ct[CT_NOW]:
            S.ct[CT_NOW] = t
            S.ct[CT_DB_N] = 0
        a = ev[i, E_ACT]
        dev = ev[i, E_DEV]
        sec = ev[i, E_SEC]
        eid = ev[i, E_EID]
        ksec = sec  # -1 when the event has no sector
        sid = -1
        if plug and (a in (A_Q, A_G, A_P, A_U, A_UT)):
            sid = plug_event(S, ev[i, E_PID], a, t)
        if a == A_Q:
            if sec >= 0:
                rm = dpop(S.d_remap, k1(dev, sec), (NULL, NULL, NULL))
            else:
                rm = (NULL, NULL, NULL)
            if ev[i, E_FLUSH] == 1:
                S.d_flushq[k1(dev, max(sec, 0))] = t
            chain_node(S, dev, ksec, a)
            b = new_bio(S, ev, i, dev, sid)
            S.bi[b, BI_RMAJ], S.bi[b, BI_RMIN], S.bi[b, BI_RSEC] = rm
            p = new_piece(S, b)
            if S.dv[dev, DV_NODES] == 0:
                _lost(S, p)  # no G/M/F/X on this device at all (bio-based): nothing can land
            else:
                S.d_chain[k1(dev, ksec)] = p
            if S.dv[dev, DV_HAS_D] == 0 and sec >= 0 and S.bia[b] == 1:
                key = (k1(dev, sec), ev[i, E_NSEC])
                S.bi[b, BI_NEXT] = dget(S.d_biowait, key, -1)
                S.d_biowait[key] = b
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
                    S.d_chain[k1(dev, split)] = r
        elif a == A_I:
            gid_event(S, dev, ksec, a, t, eid, -1)
        elif a == A_A and sec >= 0:
            S.d_remap[k1(dev, sec)] = (ev[i, E_RMAJ], ev[i, E_RMIN], ev[i, E_RSEC])
        if a in (A_D, A_R, A_C):
            isflush = ev[i, E_FLUSH] == 1 and ev[i, E_OP] == OP_N
            g = -1
            if sec >= 0 or isflush:
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
    return n


@numba.njit(cache=True)
def flush_end(S: State, dev: int, sec: int, t: int) -> None:
    """A zero-length C ends a flush sequence: preflush bios on its sector waiting for it end."""
    key = k1(dev, sec)
    S.d_lastfe[key] = t
    b = dpop(S.d_fewait, key, -1)
    while b >= 0:
        nxt = S.bi[b, BI_NEXT]
        S.bi[b, BI_FE_T] = t
        emit_bio(S, b)
        b = nxt


@numba.njit(cache=True)
def bio_done(S: State, dev: int, sec: int, nsec: int, t: int) -> None:
    """A C on a bio-based device completes every bio queued on its sector and length."""
    b = dpop(S.d_biowait, (k1(dev, sec), nsec), -1)
    while b >= 0:
        nxt = S.bi[b, BI_NEXT]
        S.bi[b, BI_NEXT] = -1
        S.bi[b, BI_BIO_C] = t
        if S.bi[b, BI_WAIT] == W_BIO_C:
            S.bi[b, BI_WAIT] = W_NONE
            emit_bio(S, b)
        b = nxt


@numba.njit(cache=True)
def finish(S: State) -> None:
    """The trace ended: every request, piece and bio still in flight is written as it is."""
    for ks in range(S.ky.shape[0]):
        if S.kya[ks] == 1:
            _close_run(S, ks)
    S.d_chain.clear()
    S.d_gid.clear()
    S.d_cov.clear()
    S.d_fifo.clear()
    S.d_fewait.clear()
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
