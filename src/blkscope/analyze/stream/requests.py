"""Requests: D, R and C paired per (device, sector, length) in time order (main's
_requests.sql). A key's events are cut into runs at a D that follows a C (a reuse of the sector);
inside a run the n-th issuing D pairs with the n-th C (two writers of one sector: D D C C, seen in
the 8 M-event fio_sched capture); an R and the D right after it belong to the latest request
issued (requeue: the LAST D starts D2C). A key is forgotten as soon as nothing of it is in flight."""

from __future__ import annotations

import numpy as np

from blkscope.analyze.stream.bios import _piece_release, finalize_piece, group_partial
from blkscope.analyze.stream.jit import inline_kernel, kernel
from blkscope.analyze.stream.keyed import tab_del, tab_find, tab_get, tab_pop, tab_put
from blkscope.analyze.stream.layout import (
    A_C,
    A_D,
    A_G,
    A_R,
    CT_DEF_N,
    CT_PLUG,
    CT_R_NEW,
    CT_RQ_N,
    DV_HAS_D,
    E_COMM,
    E_DLESS,
    E_EID,
    E_ERR,
    E_FLUSH,
    E_NSEC,
    E_OP,
    E_RWBS,
    E_SEC,
    E_T,
    GR_C_EID,
    GR_C_T,
    GR_CANDS,
    GR_D_COMM,
    GR_D_EID,
    GR_DEV,
    GR_DISPATCHES,
    GR_ERR,
    GR_FIRST_D,
    GR_FIX,
    GR_FLUSH_END,
    GR_FLUSH_Q,
    GR_ISFLUSH,
    GR_KLEN,
    GR_KSEC,
    GR_LAST_D,
    GR_MIN_EID,
    GR_OP,
    GR_PIECES,
    GR_REQUEUES,
    GR_RWBS,
    GR_STATE,
    K_BIO,
    K_DATA,
    K_FLUSH,
    K_FLUSH_END,
    KY_CS,
    KY_ISSUED,
    KY_KA,
    KY_KB,
    KY_MAXORD,
    KY_PREV,
    NULL,
    OP_F,
    OP_N,
    PC_CAND,
    PC_CAND_EID,
    PC_CHAIN,
    PC_COMM,
    PC_D_EID,
    PC_FINAL,
    PC_FIRST_Q,
    PC_G_CLOCK,
    PC_GROUP,
    PC_LAND,
    PC_LAND_T,
    PC_NEXT_CAND,
    PC_NEXT_REQ,
    PC_PID,
    PC_Q_T,
    PC_REFS,
    PC_SID,
    RQ_ACCT,
    RQ_C_EID,
    RQ_C_T,
    RQ_D_EID,
    RQ_DEV,
    RQ_DISPATCHES,
    RQ_ERR,
    RQ_FIRST_D,
    RQ_FIX,
    RQ_G_T,
    RQ_KIND,
    RQ_LAST_D,
    RQ_NSEC,
    RQ_OP,
    RQ_PARTIAL,
    RQ_PID,
    RQ_PROCESS,
    RQ_Q_T,
    RQ_REQUEUES,
    RQ_RWBS,
    RQ_SEC,
    SS_CLOSED,
    SS_PLUGGED,
    ST_BUILDING,
    ST_DONE,
    ST_WAITING,
)
from blkscope.analyze.stream.pools import give, k1, nmax, nmin, take
from blkscope.analyze.stream.state import State


@inline_kernel
def _group(S: State, ks: int, ordinal: int, dev: int, ksec: int, klen: int, isflush: int) -> int:
    g = tab_get(S.d_groups, ks, ordinal, -1)
    if g >= 0:
        return g
    g = take(S.gr, S.grf, S.gra, S.grn)
    gr = S.gr
    gr[g, GR_DEV] = dev
    gr[g, GR_KSEC] = ksec
    gr[g, GR_KLEN] = klen
    gr[g, GR_ISFLUSH] = isflush
    gr[g, GR_REQUEUES] = 0
    gr[g, GR_DISPATCHES] = 0
    gr[g, GR_FLUSH_END] = 0
    gr[g, GR_STATE] = ST_BUILDING
    gr[g, GR_PIECES] = -1
    gr[g, GR_CANDS] = -1
    gr[g, GR_FIX] = 0
    tab_put(S.d_groups, ks, ordinal, g)
    return g


@kernel
def _close_run(S: State, ks: int) -> None:
    """Every request of the key's current run is over: those without C were cut by a reuse."""
    ky = S.ky
    for ordinal in range(1, max(ky[ks, KY_MAXORD], ky[ks, KY_CS]) + 1):
        g = tab_pop(S.d_groups, ks, ordinal, -1)
        if g >= 0:
            group_done(S, g)


@inline_kernel
def _drop_key(S: State, ks: int) -> None:
    tab_del(S.d_keys, S.ky[ks, KY_KA], S.ky[ks, KY_KB])
    give(ks, S.kyf, S.kya, S.kyn)


@inline_kernel
def pair_event(S: State, ev: np.ndarray, i: int, a: int, dev: int) -> int:
    """Pair one D, R or C into its request (_requests.sql's runs and ordinals); return the
    request's group for a D that is its first, else -1."""
    sec = ev[i, E_SEC]
    isflush = 1 if (ev[i, E_FLUSH] == 1 and ev[i, E_OP] == OP_N) else 0
    ksec = -1 if isflush else sec
    klen = 0 if isflush else ev[i, E_NSEC]
    ka, kb = k1(dev, ksec), klen
    ks = tab_get(S.d_keys, ka, kb, -1)
    ky = S.ky
    if ks >= 0 and a == A_D and ky[ks, KY_PREV] == A_C:
        _close_run(S, ks)  # a D after a C starts a new run: a reuse of the sector
        ky[ks, KY_ISSUED] = 0
        ky[ks, KY_CS] = 0
        ky[ks, KY_MAXORD] = 0
    if ks < 0:
        ks = take(S.ky, S.kyf, S.kya, S.kyn)
        ky[ks, KY_KA] = ka
        ky[ks, KY_KB] = kb
        ky[ks, KY_ISSUED] = 0
        ky[ks, KY_CS] = 0
        ky[ks, KY_MAXORD] = 0
        ky[ks, KY_PREV] = 0
        tab_put(S.d_keys, ka, kb, ks)
    if a == A_C:
        ky[ks, KY_CS] += 1
        ordinal = ky[ks, KY_CS]
    elif a == A_R or ky[ks, KY_PREV] == A_R:
        # an R, and the D right after it (the requeued request dispatched again), belong to
        # the latest request issued on the key
        ordinal = max(ky[ks, KY_ISSUED], 1)
    else:
        ky[ks, KY_ISSUED] += 1
        ordinal = ky[ks, KY_ISSUED]
    if a == A_R and tab_find(S.d_groups, ks, ordinal) < 0:
        S.ct[CT_R_NEW] += 1
    g = _group(S, ks, ordinal, dev, ksec, klen, isflush)
    gr = S.gr
    eid, t = ev[i, E_EID], ev[i, E_T]
    if gr[g, GR_MIN_EID] == NULL or eid < gr[g, GR_MIN_EID]:
        gr[g, GR_MIN_EID] = eid
        gr[g, GR_OP] = ev[i, E_OP]
        gr[g, GR_RWBS] = ev[i, E_RWBS]
    first = -1
    if a == A_D:
        gr[g, GR_FIRST_D] = nmin(gr[g, GR_FIRST_D], t)
        gr[g, GR_LAST_D] = nmax(gr[g, GR_LAST_D], t)
        gr[g, GR_DISPATCHES] += 1
        if gr[g, GR_D_EID] == NULL:
            gr[g, GR_D_EID] = eid
            gr[g, GR_D_COMM] = ev[i, E_COMM]
            first = g
        ky[ks, KY_MAXORD] = max(ky[ks, KY_MAXORD], ordinal)
    elif a == A_R:
        gr[g, GR_REQUEUES] += 1
        ky[ks, KY_MAXORD] = max(ky[ks, KY_MAXORD], ordinal)
    else:
        gr[g, GR_C_T] = t
        gr[g, GR_C_EID] = eid
        ev[i, E_DLESS] = 1 if gr[g, GR_D_EID] == NULL else 0  # for the depth walk
        gr[g, GR_ERR] = ev[i, E_ERR]
        if isflush == 0 and ev[i, E_NSEC] == 0:
            gr[g, GR_FLUSH_END] = 1  # a zero-length C ends a flush sequence
    ky[ks, KY_PREV] = a
    if a == A_C:
        tab_del(S.d_groups, ks, ordinal)
        group_done(S, g)
        if ky[ks, KY_CS] >= ky[ks, KY_MAXORD]:
            _drop_key(S, ks)  # nothing of this key in flight: forget it
    return first


@inline_kernel
def group_done(S: State, g: int) -> None:
    """Request g has its completion (or never will): settle the bios that rode in it, then
    write it out once the plug clocks it needs are final."""
    gr, pc = S.gr, S.pc
    gr[g, GR_STATE] = ST_DONE
    if gr[g, GR_FLUSH_END] == 1:
        gr[g, GR_FLUSH_Q] = tab_get(S.d_flushq, k1(gr[g, GR_DEV], gr[g, GR_KSEC]), 0, NULL)
    # G pieces still waiting to see whether their own sector's next D comes: this covering
    # request completed first, so they rode in it
    p = gr[g, GR_CANDS]
    while p >= 0:
        nxt = pc[p, PC_NEXT_CAND]
        if pc[p, PC_CHAIN] == 1 and pc[p, PC_CAND] == g and pc[p, PC_FINAL] == 0:
            pc[p, PC_D_EID] = pc[p, PC_CAND_EID]
            pc[p, PC_CHAIN] = 0
            pc[p, PC_GROUP] = g
            pc[p, PC_NEXT_REQ] = gr[g, GR_PIECES]
            gr[g, GR_PIECES] = p
            pc[p, PC_REFS] += 1
        _piece_release(S, p)
        p = nxt
    gr[g, GR_CANDS] = -1
    p = gr[g, GR_PIECES]
    while p >= 0:
        finalize_piece(S, p, g)
        p = pc[p, PC_NEXT_REQ]
    if not try_emit_group(S, g):
        gr[g, GR_STATE] = ST_WAITING
        S.deferred[S.ct[CT_DEF_N]] = g
        S.ct[CT_DEF_N] += 1


@inline_kernel
def try_emit_group(S: State, g: int) -> bool:
    """Write request g's row (_requests.sql + _requests_build.sql), unless a plug session of
    one of its bios is still open and unplugged (its clock may still move); return whether
    written."""
    gr, pc, ss = S.gr, S.pc, S.ss
    plug = S.ct[CT_PLUG] == 1
    q_t = NULL
    g_t = NULL
    g_pid = NULL
    g_comm = NULL
    g_clock = NULL
    q_clock = NULL
    p = gr[g, GR_PIECES]
    while p >= 0:
        q_t = nmin(q_t, pc[p, PC_Q_T])
        if plug:
            s = pc[p, PC_SID]
            if ss[s, SS_PLUGGED] == 1:
                q_clock = nmin(q_clock, pc[p, PC_FIRST_Q])
            elif ss[s, SS_CLOSED] == 1:
                q_clock = nmin(q_clock, pc[p, PC_Q_T])
            else:
                return False
        if pc[p, PC_LAND] == A_G and (g_t == NULL or pc[p, PC_LAND_T] < g_t):
            g_t = pc[p, PC_LAND_T]
            g_pid = pc[p, PC_PID]
            g_comm = pc[p, PC_COMM]
            g_clock = pc[p, PC_G_CLOCK]
        p = pc[p, PC_NEXT_REQ]
    n = S.ct[CT_RQ_N]
    S.ct[CT_RQ_N] = n + 1
    o = S.rq
    dev = gr[g, GR_DEV]
    isflush = gr[g, GR_ISFLUSH] == 1
    o[n, RQ_DEV] = dev
    o[n, RQ_OP] = OP_F if isflush else gr[g, GR_OP]
    o[n, RQ_SEC] = -1 if isflush else gr[g, GR_KSEC]
    o[n, RQ_NSEC] = gr[g, GR_KLEN]
    o[n, RQ_FIX] = 0
    if isflush:
        kind = K_FLUSH
    elif gr[g, GR_FLUSH_END] == 1:
        kind = K_FLUSH_END
    elif S.dv[dev, DV_HAS_D] == 0:
        kind = K_BIO
    else:
        kind = K_DATA
        if gr[g, GR_D_EID] == NULL:
            o[n, RQ_FIX] = gr[
                g, GR_MIN_EID
            ]  # 'orphan' if its key had an earlier run: settled afterwards
    o[n, RQ_KIND] = kind
    o[n, RQ_RWBS] = gr[g, GR_RWBS]
    fq = gr[g, GR_FLUSH_Q] if kind == K_FLUSH_END else NULL
    o[n, RQ_Q_T] = q_t if q_t != NULL else fq
    o[n, RQ_G_T] = g_t
    if plug:
        clock = nmax(q_clock, g_clock)
        o[n, RQ_ACCT] = clock if clock != NULL else o[n, RQ_Q_T]
    else:
        o[n, RQ_ACCT] = g_t if g_t != NULL else o[n, RQ_Q_T]
    o[n, RQ_FIRST_D] = gr[g, GR_FIRST_D]
    o[n, RQ_LAST_D] = gr[g, GR_LAST_D]
    o[n, RQ_C_T] = gr[g, GR_C_T]
    o[n, RQ_REQUEUES] = gr[g, GR_REQUEUES]
    o[n, RQ_DISPATCHES] = gr[g, GR_DISPATCHES]
    o[n, RQ_ERR] = gr[g, GR_ERR]
    o[n, RQ_PARTIAL] = 1 if group_partial(S, g) else 0
    o[n, RQ_PID] = g_pid
    o[n, RQ_PROCESS] = g_comm if g_comm != NULL else gr[g, GR_D_COMM]
    o[n, RQ_D_EID] = gr[g, GR_D_EID]
    o[n, RQ_C_EID] = gr[g, GR_C_EID]
    p = gr[g, GR_PIECES]
    while p >= 0:
        nxt = pc[p, PC_NEXT_REQ]
        _piece_release(S, p)
        p = nxt
    give(g, S.grf, S.gra, S.grn)
    return True


@kernel
def retry_deferred(S: State) -> None:
    kept = 0
    for j in range(S.ct[CT_DEF_N]):
        g = S.deferred[j]
        if not try_emit_group(S, g):
            S.deferred[kept] = g
            kept += 1
    S.ct[CT_DEF_N] = kept
