"""Bios and their pieces in flight: a bio is written when every piece knows the request it rode
in (or that it was lost), and, for a preflush bio, when its flush sequence ended; a bio on a
bio-based device (device mapper, md: Q and C only) when its own C came."""

from __future__ import annotations

import numpy as np

from blkscope.analyze.stream.jit import inline_kernel, kernel
from blkscope.analyze.stream.keyed import tab_del, tab_find, tab_get, tab_put, tab_remove
from blkscope.analyze.stream.layout import (
    BI_BIO_C,
    BI_C_T,
    BI_COMM,
    BI_CUT,
    BI_D_EID,
    BI_D_T,
    BI_DEV,
    BI_FE_T,
    BI_FIRST_Q,
    BI_FLUSH,
    BI_G_T,
    BI_I_T,
    BI_M_T,
    BI_MERGED,
    BI_NEXT,
    BI_NSEC,
    BI_OP,
    BI_PENDING,
    BI_PID,
    BI_PIECES,
    BI_Q_EID,
    BI_Q_T,
    BI_REQUEUES,
    BI_RMAJ,
    BI_RMIN,
    BI_RSEC,
    BI_RWBS,
    BI_SEC,
    BI_SID,
    BI_WAIT,
    BO_C_T,
    BO_COMM,
    BO_D2C,
    BO_D_EID,
    BO_D_T,
    BO_DEV,
    BO_G_T,
    BO_I_T,
    BO_M_T,
    BO_MERGED,
    BO_NSEC,
    BO_OP,
    BO_PARTIAL,
    BO_PID,
    BO_PIECES,
    BO_Q_EID,
    BO_Q_T,
    BO_REQUEUES,
    BO_RMAJ,
    BO_RMIN,
    BO_RSEC,
    BO_RWBS,
    BO_SEC,
    CT_BO_N,
    DV_HAS_D,
    E_COMM,
    E_EID,
    E_FLUSH,
    E_NSEC,
    E_OP,
    E_PID,
    E_RWBS,
    E_SEC,
    E_T,
    GR_C_T,
    GR_D_EID,
    GR_DEV,
    GR_FLUSH_END,
    GR_LAST_D,
    GR_REQUEUES,
    NULL,
    PC_BIO,
    PC_CAND,
    PC_CHAIN,
    PC_COV_KEY,
    PC_COV_NEXT,
    PC_COV_PREV,
    PC_D_EID,
    PC_FINAL,
    PC_FIRST_Q,
    PC_GPHASE,
    PC_GROUP,
    PC_I_T,
    PC_LAND,
    PC_NEXT_CAND,
    PC_NEXT_REQ,
    PC_NSEC,
    PC_PHASE,
    PC_Q_T,
    PC_REFS,
    PC_SEC,
    PC_SID,
    SS_FIRST_Q,
    SS_REFS,
    W_BIO_C,
    W_FLUSH_END,
    W_NONE,
)
from blkscope.analyze.stream.plug import _session_release
from blkscope.analyze.stream.pools import give, k1, nmax, nmin, take
from blkscope.analyze.stream.q2q import emit_q2q
from blkscope.analyze.stream.state import State


@kernel
def _piece_release(S: State, p: int) -> None:
    S.pc[p, PC_REFS] -= 1
    if S.pc[p, PC_REFS] == 0:
        if S.pc[p, PC_SID] >= 0:
            _session_release(S, S.pc[p, PC_SID])
        give(p, S.pcf, S.pca, S.pcn)


@inline_kernel
def new_piece(S: State, b: int) -> int:
    p = take(S.pc, S.pcf, S.pca, S.pcn)
    pc = S.pc
    pc[p, PC_BIO] = b
    pc[p, PC_PHASE] = 1
    pc[p, PC_LAND] = 0
    pc[p, PC_SEC] = -1
    pc[p, PC_NSEC] = -1
    pc[p, PC_GPHASE] = 0
    pc[p, PC_CAND] = -2
    pc[p, PC_CHAIN] = 0
    pc[p, PC_GROUP] = -1
    pc[p, PC_NEXT_REQ] = -1
    pc[p, PC_NEXT_CAND] = -1
    pc[p, PC_REFS] = 1  # the bio's
    pc[p, PC_FINAL] = 0
    pc[p, PC_Q_T] = S.bi[b, BI_Q_T]
    pc[p, PC_SID] = S.bi[b, BI_SID]
    pc[p, PC_FIRST_Q] = S.bi[b, BI_FIRST_Q]
    if pc[p, PC_SID] >= 0:
        S.ss[pc[p, PC_SID], SS_REFS] += 1
    S.bi[b, BI_PIECES] += 1
    S.bi[b, BI_PENDING] += 1
    return p


@inline_kernel
def new_bio(S: State, ev: np.ndarray, i: int, dev: int, sid: int) -> int:
    b = take(S.bi, S.bif, S.bia, S.bin_)
    bi = S.bi
    bi[b, BI_DEV] = dev
    bi[b, BI_Q_EID] = ev[i, E_EID]
    bi[b, BI_Q_T] = ev[i, E_T]
    bi[b, BI_OP] = ev[i, E_OP]
    bi[b, BI_RWBS] = ev[i, E_RWBS]
    bi[b, BI_SEC] = ev[i, E_SEC]
    bi[b, BI_NSEC] = ev[i, E_NSEC]
    bi[b, BI_PID] = ev[i, E_PID]
    bi[b, BI_COMM] = ev[i, E_COMM]
    bi[b, BI_FLUSH] = ev[i, E_FLUSH]
    bi[b, BI_PENDING] = 0
    bi[b, BI_PIECES] = 0
    bi[b, BI_MERGED] = 0
    bi[b, BI_CUT] = 0
    bi[b, BI_WAIT] = W_NONE
    bi[b, BI_NEXT] = -1
    bi[b, BI_SID] = sid
    bi[b, BI_FIRST_Q] = S.ss[sid, SS_FIRST_Q] if sid >= 0 else NULL
    return b


@inline_kernel
def emit_bio(S: State, b: int) -> None:
    bi = S.bi
    n = S.ct[CT_BO_N]
    S.ct[CT_BO_N] = n + 1
    o = S.bo
    cut = bi[b, BI_CUT] == 1
    c_eff = bi[b, BI_C_T]
    if bi[b, BI_BIO_C] != NULL:  # a bio-based device's completion (_bios_build.sql)
        c_eff = bi[b, BI_BIO_C]
        cut = False
    o[n, BO_DEV] = bi[b, BI_DEV]
    o[n, BO_OP] = bi[b, BI_OP]
    o[n, BO_RWBS] = bi[b, BI_RWBS]
    o[n, BO_SEC] = bi[b, BI_SEC]
    o[n, BO_NSEC] = bi[b, BI_NSEC]
    o[n, BO_PID] = bi[b, BI_PID]
    o[n, BO_COMM] = bi[b, BI_COMM]
    o[n, BO_Q_T] = bi[b, BI_Q_T]
    o[n, BO_G_T] = bi[b, BI_G_T]
    o[n, BO_M_T] = bi[b, BI_M_T]
    o[n, BO_I_T] = bi[b, BI_I_T]
    o[n, BO_D_T] = bi[b, BI_D_T]
    if cut:
        o[n, BO_C_T] = NULL
        o[n, BO_D2C] = NULL
    else:
        o[n, BO_C_T] = nmax(c_eff, bi[b, BI_FE_T])
        if c_eff == NULL or bi[b, BI_D_T] == NULL:
            o[n, BO_D2C] = NULL
        else:
            o[n, BO_D2C] = c_eff - bi[b, BI_D_T]
    o[n, BO_MERGED] = bi[b, BI_MERGED]
    o[n, BO_PIECES] = bi[b, BI_PIECES]
    o[n, BO_REQUEUES] = bi[b, BI_REQUEUES]
    o[n, BO_PARTIAL] = 1 if cut else 0
    o[n, BO_RMAJ] = bi[b, BI_RMAJ]
    o[n, BO_RMIN] = bi[b, BI_RMIN]
    o[n, BO_RSEC] = bi[b, BI_RSEC]
    o[n, BO_Q_EID] = bi[b, BI_Q_EID]
    o[n, BO_D_EID] = bi[b, BI_D_EID]
    emit_q2q(S, b, n)
    if bi[b, BI_WAIT] == W_BIO_C or S.dv[bi[b, BI_DEV], DV_HAS_D] == 0:
        _biowait_unlink(S, b)
    give(b, S.bif, S.bia, S.bin_)


@inline_kernel
def _biowait_unlink(S: State, b: int) -> None:
    """Take bio b out of its bio-based completion wait list, if it is in one."""
    if S.bi[b, BI_SEC] < 0:
        return
    ka, kb = k1(S.bi[b, BI_DEV], S.bi[b, BI_SEC]), S.bi[b, BI_NSEC]
    head = tab_get(S.d_biowait, ka, kb, -1)
    prev = -1
    x = head
    while x >= 0:
        nxt = S.bi[x, BI_NEXT]
        if x == b:
            if prev < 0:
                if nxt >= 0:
                    tab_put(S.d_biowait, ka, kb, nxt)
                else:
                    tab_del(S.d_biowait, ka, kb)
            else:
                S.bi[prev, BI_NEXT] = nxt
            return
        prev = x
        x = nxt


@inline_kernel
def bio_finish(S: State, b: int) -> None:
    """All pieces of bio b are settled: emit it, or wait for the end of its flush sequence or
    (bio-based device) its completion."""
    bi = S.bi
    dev = bi[b, BI_DEV]
    if bi[b, BI_FLUSH] == 1 and bi[b, BI_CUT] == 0 and bi[b, BI_C_T] != NULL:
        key = k1(dev, max(bi[b, BI_SEC], 0))
        if tab_get(S.d_lastfe, key, 0, NULL) == bi[b, BI_C_T]:
            bi[b, BI_FE_T] = bi[b, BI_C_T]
        else:
            bi[b, BI_WAIT] = W_FLUSH_END
            bi[b, BI_NEXT] = tab_get(S.d_fewait, key, 0, -1)
            tab_put(S.d_fewait, key, 0, b)
            return
    if (
        S.dv[dev, DV_HAS_D] == 0
        and bi[b, BI_PIECES] == 1
        and bi[b, BI_D_EID] == NULL
        and bi[b, BI_SEC] >= 0
        and bi[b, BI_BIO_C] == NULL
    ):
        bi[b, BI_WAIT] = W_BIO_C
        return
    emit_bio(S, b)


@kernel
def finalize_piece(S: State, p: int, g: int) -> None:
    """Piece p's request is known (group g, or none when g < 0): tell its bio."""
    pc, bi, gr = S.pc, S.bi, S.gr
    if pc[p, PC_FINAL] == 1:
        return
    pc[p, PC_FINAL] = 1
    b = pc[p, PC_BIO]
    if pc[p, PC_GPHASE] > 0:  # no longer waiting for the G/I/D after its G
        key = k1(bi[b, BI_DEV], pc[p, PC_SEC])
        s = tab_find(S.d_gid, key, 0)
        if s >= 0 and S.d_gid[s, 2] == p:
            tab_remove(S.d_gid, s)
        pc[p, PC_GPHASE] = 0
    cov_remove(S, p)
    if g >= 0:
        bi[b, BI_D_T] = nmin(bi[b, BI_D_T], gr[g, GR_LAST_D])
        bi[b, BI_C_T] = nmax(bi[b, BI_C_T], gr[g, GR_C_T])
        if group_partial(S, g) or gr[g, GR_C_T] == NULL:
            bi[b, BI_CUT] = 1
        if bi[b, BI_REQUEUES] == NULL:
            bi[b, BI_REQUEUES] = gr[g, GR_REQUEUES]
        else:
            bi[b, BI_REQUEUES] += gr[g, GR_REQUEUES]
    else:
        bi[b, BI_CUT] = 1
    bi[b, BI_D_EID] = nmin(bi[b, BI_D_EID], pc[p, PC_D_EID])
    bi[b, BI_I_T] = nmin(bi[b, BI_I_T], pc[p, PC_I_T])
    bi[b, BI_PENDING] -= 1
    _piece_release(S, p)  # the bio no longer needs it
    if bi[b, BI_PENDING] == 0:
        bio_finish(S, b)


@kernel
def group_partial(S: State, g: int) -> bool:
    gr = S.gr
    if gr[g, GR_C_T] == NULL:
        return True
    if gr[g, GR_D_EID] == NULL:
        return not (gr[g, GR_FLUSH_END] == 1 or S.dv[gr[g, GR_DEV], DV_HAS_D] == 0)
    return False


@kernel
def cov_remove(S: State, p: int) -> None:
    pc = S.pc
    key = pc[p, PC_COV_KEY]
    if key == NULL:
        return
    prev, nxt = pc[p, PC_COV_PREV], pc[p, PC_COV_NEXT]
    if prev >= 0:
        pc[prev, PC_COV_NEXT] = nxt
    elif nxt >= 0:
        tab_put(S.d_cov, key, 0, nxt)
    else:
        tab_del(S.d_cov, key, 0)
    if nxt >= 0:
        pc[nxt, PC_COV_PREV] = prev
    pc[p, PC_COV_KEY] = NULL


@inline_kernel
def _lost(S: State, p: int) -> None:
    S.pc[p, PC_LAND] = 0
    finalize_piece(S, p, -1)
