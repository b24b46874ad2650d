"""The compiled pass itself (scratch version: one module, split later)."""

from __future__ import annotations

import numba
import numpy as np

from blkscope.analyze.stream.layout import *  # noqa: F403
from blkscope.analyze.stream.pools import give, take

FIVE_MS = 5_000_000


@numba.njit(cache=True, inline="always")
def k1(dev: int, sec: int) -> int:
    return (dev << 48) | (sec + 1)


@numba.njit(cache=True, inline="always")
def dget(d, key, default):
    if key in d:
        return d[key]
    return default


@numba.njit(cache=True, inline="always")
def dpop(d, key, default):
    if key in d:
        value = d[key]
        del d[key]
        return value
    return default


@numba.njit(cache=True, inline="always")
def nmin(a: int, b: int) -> int:
    if a == NULL:
        return b
    if b == NULL:
        return a
    return min(a, b)


@numba.njit(cache=True, inline="always")
def nmax(a: int, b: int) -> int:
    if a == NULL:
        return b
    if b == NULL:
        return a
    return max(a, b)


# ============================================================ plug sessions (the plug clock)
@numba.njit(cache=True)
def _session_release(S, s):
    S.ss[s, SS_REFS] -= 1
    if S.ss[s, SS_REFS] == 0:
        give(s, S.ssf, S.ssa, S.ssn)


@numba.njit(cache=True)
def _session_close(S, s):
    if s >= 0 and S.ss[s, SS_CLOSED] == 0:
        S.ss[s, SS_CLOSED] = 1
        _session_release(S, s)  # the reference the open session held


@numba.njit(cache=True)
def _session_open(S):
    s = take(S.ss, S.ssf, S.ssa, S.ssn)
    S.ss[s, SS_PLUGGED] = 0
    S.ss[s, SS_CLOSED] = 0
    S.ss[s, SS_REFS] = 1
    return s


@numba.njit(cache=True)
def plug_event(S, pid, a, t):
    """The session (row of S.ss) the task's event falls in; see _plug_clock.sql for the rules."""
    slot = dget(S.d_pids, pid, -1)
    if slot < 0:
        slot = take(S.pd, S.pdf, S.pda, S.pdn)
        S.d_pids[pid] = slot
        S.pd[slot, PD_PENDING] = 0
        starts = True
    else:
        last_a = S.pd[slot, PD_LAST_A]
        if S.pd[slot, PD_PENDING] == 1:
            # the previous event (a U or UT right after a U) opened a session of its own unless
            # this one is a P: then it stayed in the old session
            S.pd[slot, PD_PENDING] = 0
            if a != A_P:
                _session_close(S, S.pd[slot, PD_SESS])
                S.pd[slot, PD_SESS] = _session_open(S)
        if t - S.pd[slot, PD_LAST_T] > FIVE_MS or last_a == A_UT:
            starts = True
        elif last_a == A_U:
            if a == A_P:
                starts = False
            elif a >= A_U:
                starts = False  # decided by the next event of the task (one event lookahead)
                S.pd[slot, PD_PENDING] = 1
            else:
                starts = True
        else:
            starts = False
    if starts:
        if S.pd[slot, PD_SESS] != NULL:
            _session_close(S, S.pd[slot, PD_SESS])
        S.pd[slot, PD_SESS] = _session_open(S)
    s = S.pd[slot, PD_SESS]
    S.pd[slot, PD_LAST_A] = a
    S.pd[slot, PD_LAST_T] = t
    if a == A_Q and S.ss[s, SS_FIRST_Q] == NULL:
        S.ss[s, SS_FIRST_Q] = t
    if a <= A_G and S.ss[s, SS_FIRST_QG] == NULL:
        S.ss[s, SS_FIRST_QG] = t
    if a == A_P:
        S.ss[s, SS_PLUGGED] = 1
    return s


@numba.njit(cache=True)
def close_idle_sessions(S, now, everything):
    """A task quiet for more than 5 ms starts a new session with its next event: its current
    one is final now (and the task's record can go)."""
    gone = []
    for pid, slot in S.d_pids.items():
        if everything or now - S.pd[slot, PD_LAST_T] > FIVE_MS:
            gone.append(pid)
    for pid in gone:
        slot = dpop(S.d_pids, pid, -1)
        _session_close(S, S.pd[slot, PD_SESS])
        give(slot, S.pdf, S.pda, S.pdn)


# ============================================================ pieces and bios
@numba.njit(cache=True)
def _piece_release(S, p):
    S.pc[p, PC_REFS] -= 1
    if S.pc[p, PC_REFS] == 0:
        if S.pc[p, PC_SID] >= 0:
            _session_release(S, S.pc[p, PC_SID])
        give(p, S.pcf, S.pca, S.pcn)


@numba.njit(cache=True)
def new_piece(S, b):
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


@numba.njit(cache=True)
def emit_bio(S, b):
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
    if bi[b, BI_WAIT] == W_BIO_C or S.dv[bi[b, BI_DEV], DV_HAS_D] == 0:
        _biowait_unlink(S, b)
    give(b, S.bif, S.bia, S.bin_)


@numba.njit(cache=True)
def _biowait_unlink(S, b):
    """Take bio b out of its bio-based completion wait list, if it is in one."""
    if S.bi[b, BI_SEC] < 0:
        return
    key = (k1(S.bi[b, BI_DEV], S.bi[b, BI_SEC]), S.bi[b, BI_NSEC])
    head = dget(S.d_biowait, key, -1)
    prev = -1
    x = head
    while x >= 0:
        nxt = S.bi[x, BI_NEXT]
        if x == b:
            if prev < 0:
                if nxt >= 0:
                    S.d_biowait[key] = nxt
                else:
                    del S.d_biowait[key]
            else:
                S.bi[prev, BI_NEXT] = nxt
            return
        prev = x
        x = nxt


@numba.njit(cache=True)
def bio_finish(S, b):
    """All pieces of bio b are settled: emit it, or wait for the end of its flush sequence or
    (bio-based device) its completion."""
    bi = S.bi
    dev = bi[b, BI_DEV]
    if bi[b, BI_FLUSH] == 1 and bi[b, BI_CUT] == 0 and bi[b, BI_C_T] != NULL:
        key = k1(dev, max(bi[b, BI_SEC], 0))
        if dget(S.d_lastfe, key, NULL) == bi[b, BI_C_T]:
            bi[b, BI_FE_T] = bi[b, BI_C_T]
        else:
            bi[b, BI_WAIT] = W_FLUSH_END
            bi[b, BI_NEXT] = dget(S.d_fewait, key, -1)
            S.d_fewait[key] = b
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


@numba.njit(cache=True)
def finalize_piece(S, p, g):
    """Piece p's request is known (group g, or none when g < 0): tell its bio."""
    pc, bi, gr = S.pc, S.bi, S.gr
    if pc[p, PC_FINAL] == 1:
        return
    pc[p, PC_FINAL] = 1
    b = pc[p, PC_BIO]
    if pc[p, PC_GPHASE] > 0:  # no longer waiting for the G/I/D after its G
        key = k1(bi[b, BI_DEV], pc[p, PC_SEC])
        if dget(S.d_gid, key, -1) == p:
            del S.d_gid[key]
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


@numba.njit(cache=True)
def group_partial(S, g):
    gr = S.gr
    if gr[g, GR_C_T] == NULL:
        return True
    if gr[g, GR_D_EID] == NULL:
        return not (gr[g, GR_FLUSH_END] == 1 or S.dv[gr[g, GR_DEV], DV_HAS_D] == 0)
    return False


# ============================================================ covering D lookup
@numba.njit(cache=True)
def cov_remove(S, p):
    pc = S.pc
    key = pc[p, PC_COV_KEY]
    if key == NULL:
        return
    prev, nxt = pc[p, PC_COV_PREV], pc[p, PC_COV_NEXT]
    if prev >= 0:
        pc[prev, PC_COV_NEXT] = nxt
    elif nxt >= 0:
        S.d_cov[key] = nxt
    else:
        del S.d_cov[key]
    if nxt >= 0:
        pc[nxt, PC_COV_PREV] = prev
    pc[p, PC_COV_KEY] = NULL


@numba.njit(cache=True)
def cov_found(S, p, eid, g):
    """D eid (first D of group g, or g < 0) is the first D covering piece p since it landed."""
    cov_remove(S, p)
    if S.pc[p, PC_CHAIN] == 1:
        # a G whose own next D on its sector may still come: keep this as its fallback
        S.pc[p, PC_CAND] = g
        S.pc[p, PC_CAND_EID] = eid
        if g >= 0:
            S.pc[p, PC_NEXT_CAND] = S.gr[g, GR_CANDS]
            S.gr[g, GR_CANDS] = p
            S.pc[p, PC_REFS] += 1
    else:
        link(S, p, eid, g)


@numba.njit(cache=True)
def cov_register(S, p, dev):
    """Piece p (merged, or a G that may lose its request's start to a front merge) waits for
    the first D on its device covering it (btt's rule, time-ordered: _piece_requests.sql)."""
    sec, n = S.pc[p, PC_SEC], S.pc[p, PC_NSEC]
    for i in range(S.ct[CT_DB_N]):  # a D at this very nanosecond, logged just before
        db = S.db
        if db[i, DB_DEV] == dev and db[i, DB_SEC] <= sec and db[i, DB_SEC] + db[i, DB_NSEC] >= sec + n:
            g = db[i, DB_GROUP]
            if g >= 0 and (S.gra[g] == 0 or S.gr[g, GR_D_EID] != db[i, DB_EID]):
                g = -1
            cov_found(S, p, db[i, DB_EID], g)
            return
    key = (dev << 48) | (sec >> 12)
    head = dget(S.d_cov, key, -1)
    S.pc[p, PC_COV_PREV] = -1
    S.pc[p, PC_COV_NEXT] = head
    if head >= 0:
        S.pc[head, PC_COV_PREV] = p
    S.d_cov[key] = p
    S.pc[p, PC_COV_KEY] = key


@numba.njit(cache=True)
def cov_dispatch(S, dev, eid, sec, n, g):
    """A D on the device: it is the covering D of every waiting piece inside its range."""
    for block in range(sec >> 12, ((sec + n) >> 12) + 1):
        p = dget(S.d_cov, (dev << 48) | block, -1)
        while p >= 0:
            nxt = S.pc[p, PC_COV_NEXT]
            ps = S.pc[p, PC_SEC]
            if sec <= ps and sec + n >= ps + S.pc[p, PC_NSEC]:
                cov_found(S, p, eid, g)
            p = nxt
    i = S.ct[CT_DB_N]
    if i < DB_CAP:
        S.db[i, DB_DEV] = dev
        S.db[i, DB_EID] = eid
        S.db[i, DB_SEC] = sec
        S.db[i, DB_NSEC] = n
        S.db[i, DB_GROUP] = g
        S.ct[CT_DB_N] = i + 1


@numba.njit(cache=True)
def link(S, p, eid, g):
    """Piece p rode in the request whose first D is eid (group g; g < 0: no such request)."""
    pc = S.pc
    pc[p, PC_D_EID] = eid
    pc[p, PC_CHAIN] = 0
    cov_remove(S, p)
    if g >= 0 and S.gr[g, GR_STATE] == ST_BUILDING:
        pc[p, PC_GROUP] = g
        pc[p, PC_NEXT_REQ] = S.gr[g, GR_PIECES]
        S.gr[g, GR_PIECES] = p
        pc[p, PC_REFS] += 1
    else:
        finalize_piece(S, p, -1)


# ============================================================ the G -> (I) -> D chain of a sector
@numba.njit(cache=True)
def gid_event(S, dev, ksec, a, t, eid, g):
    """A G, I or D on (device, sector): the next event after a waiting G there."""
    key = k1(dev, ksec)
    p = dget(S.d_gid, key, -1)
    if p < 0:
        return
    pc = S.pc
    if pc[p, PC_GPHASE] == 1 and a == A_I:
        pc[p, PC_I_T] = t
        pc[p, PC_GPHASE] = 2
        return
    del S.d_gid[key]
    pc[p, PC_GPHASE] = 0
    if pc[p, PC_SEC] < 0:  # data-less flush G: the flush FIFO says which D
        return
    if a == A_D:
        link(S, p, eid, g)
    else:
        # the G's request is not the next D on its sector (a front merge moved its start)
        pc[p, PC_CHAIN] = 0
        if pc[p, PC_CAND] != -2:
            link(S, p, pc[p, PC_CAND_EID], pc[p, PC_CAND])


# ============================================================ data-less flush G/D: first in, first out
@numba.njit(cache=True)
def fifo_g(S, dev, p):
    dv = S.dv
    if dv[dev, DV_FIFO_LAST] == A_D:  # a G after a D opens a new run
        run = dv[dev, DV_FIFO_RUN]
        for n in range(dv[dev, DV_FIFO_ND] + 1, dv[dev, DV_FIFO_NG] + 1):
            left = dpop(S.d_fifo, ((dev << 48) | run, n), -1)
            if left >= 0:
                finalize_piece(S, left, -1)
        dv[dev, DV_FIFO_RUN] = run + 1
        dv[dev, DV_FIFO_NG] = 0
        dv[dev, DV_FIFO_ND] = 0
    dv[dev, DV_FIFO_NG] += 1
    S.d_fifo[((dev << 48) | dv[dev, DV_FIFO_RUN], dv[dev, DV_FIFO_NG])] = p
    dv[dev, DV_FIFO_LAST] = A_G


@numba.njit(cache=True)
def fifo_d(S, dev, eid, g):
    dv = S.dv
    dv[dev, DV_FIFO_ND] += 1
    p = dpop(S.d_fifo, ((dev << 48) | dv[dev, DV_FIFO_RUN], dv[dev, DV_FIFO_ND]), -1)
    if p >= 0:
        link(S, p, eid, g)
    dv[dev, DV_FIFO_LAST] = A_D


# ============================================================ requests: D/R/C on (device, sector, length)
@numba.njit(cache=True)
def _group(S, ks, ordinal, dev, ksec, klen, isflush):
    key = (ks, ordinal)
    g = dget(S.d_groups, key, -1)
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
    S.d_groups[key] = g
    return g


@numba.njit(cache=True)
def _close_run(S, ks):
    """Every request of the key's current run is over: those without C were cut by a reuse."""
    ky = S.ky
    for ordinal in range(1, max(ky[ks, KY_MAXORD], ky[ks, KY_CS]) + 1):
        g = dpop(S.d_groups, (ks, ordinal), -1)
        if g >= 0:
            group_done(S, g)


@numba.njit(cache=True)
def _drop_key(S, ks):
    del S.d_keys[(S.ky[ks, KY_KA], S.ky[ks, KY_KB])]
    give(ks, S.kyf, S.kya, S.kyn)


@numba.njit(cache=True)
def pair_event(S, ev, i, a, dev):
    """Pair one D, R or C into its request (_requests.sql's runs and ordinals); return the
    request's group for a D that is its first, else -1."""
    sec = ev[i, E_SEC]
    isflush = 1 if (ev[i, E_FLUSH] == 1 and ev[i, E_OP] == OP_N) else 0
    ksec = -1 if isflush else sec
    klen = 0 if isflush else ev[i, E_NSEC]
    ka, kb = k1(dev, ksec), klen
    ks = dget(S.d_keys, (ka, kb), -1)
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
        S.d_keys[(ka, kb)] = ks
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
    if a == A_R and dget(S.d_groups, (ks, ordinal), -1) < 0:
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
        gr[g, GR_ERR] = ev[i, E_ERR]
        if isflush == 0 and ev[i, E_NSEC] == 0:
            gr[g, GR_FLUSH_END] = 1  # a zero-length C ends a flush sequence
    ky[ks, KY_PREV] = a
    if a == A_C:
        del S.d_groups[(ks, ordinal)]
        group_done(S, g)
        if ky[ks, KY_CS] >= ky[ks, KY_MAXORD]:
            _drop_key(S, ks)  # nothing of this key in flight: forget it
    return first


@numba.njit(cache=True)
def group_done(S, g):
    """Request g has its completion (or never will): settle the bios that rode in it, then
    write it out once the plug clocks it needs are final."""
    gr, pc = S.gr, S.pc
    gr[g, GR_STATE] = ST_DONE
    if gr[g, GR_FLUSH_END] == 1:
        gr[g, GR_FLUSH_Q] = dget(S.d_flushq, k1(gr[g, GR_DEV], gr[g, GR_KSEC]), NULL)
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


@numba.njit(cache=True)
def try_emit_group(S, g):
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
            o[n, RQ_FIX] = gr[g, GR_MIN_EID]  # 'orphan' if its key had an earlier run: settled afterwards
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


@numba.njit(cache=True)
def retry_deferred(S):
    kept = 0
    for j in range(S.ct[CT_DEF_N]):
        g = S.deferred[j]
        if not try_emit_group(S, g):
            S.deferred[kept] = g
            kept += 1
    S.ct[CT_DEF_N] = kept


# ============================================================ the bio chain: Q, G, M, F, X per sector
@numba.njit(cache=True)
def _lost(S, p):
    S.pc[p, PC_LAND] = 0
    finalize_piece(S, p, -1)


@numba.njit(cache=True)
def chain_node(S, dev, ksec, a):
    """A node (Q G M F X, or S: a split's remainder) on (device, start sector): it is what
    happened next to a piece waiting there. Return (piece landing on this G/M/F, piece whose
    split this X is), each -1 if none."""
    key = k1(dev, ksec)
    w = dget(S.d_chain, key, -1)
    if w < 0:
        return -1, -1
    if S.pc[w, PC_PHASE] == 1 and a == A_X:
        S.pc[w, PC_PHASE] = 2  # the head piece lands on the node after the X
        return -1, w
    del S.d_chain[key]
    if a == A_G or a == A_M or a == A_F:
        return w, -1
    _lost(S, w)  # a Q or a remainder start came first: the piece was re-queued unseen
    return -1, -1


@numba.njit(cache=True)
def land(S, p, ev, i, a, dev, g_clock):
    """Piece p landed on this G (new request) or M/F (merged into one)."""
    pc, bi = S.pc, S.bi
    b = pc[p, PC_BIO]
    t, sec = ev[i, E_T], ev[i, E_SEC]
    pc[p, PC_LAND] = a
    pc[p, PC_LAND_T] = t
    pc[p, PC_SEC] = sec
    pc[p, PC_NSEC] = ev[i, E_NSEC]
    pc[p, PC_PID] = ev[i, E_PID]
    pc[p, PC_COMM] = ev[i, E_COMM]
    if a == A_G:
        bi[b, BI_G_T] = nmin(bi[b, BI_G_T], t)
        pc[p, PC_G_CLOCK] = g_clock
        pc[p, PC_GPHASE] = 1
        S.d_gid[k1(dev, sec)] = p
        if sec >= 0:
            pc[p, PC_CHAIN] = 1
            cov_register(S, p, dev)
    else:
        bi[b, BI_M_T] = nmin(bi[b, BI_M_T], t)
        bi[b, BI_MERGED] = 1
        if sec >= 0:
            cov_register(S, p, dev)
        else:
            finalize_piece(S, p, -1)


@numba.njit(cache=True)
def new_bio(S, ev, i, dev, sid):
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


# ============================================================ one batch of events
@numba.njit(cache=True)
def process(S, ev, start, rq_cap, bo_cap):
    """Run events ev[start:] through every table; stop early (returning the next index) when
    an output matrix could overflow."""
    n = ev.shape[0]
    plug = S.ct[CT_PLUG] == 1
    for i in range(start, n):
        if (S.ct[CT_RQ_N] + (S.gr.shape[0] - S.grn[0]) + 64 > rq_cap
                or S.ct[CT_BO_N] + (S.bi.shape[0] - S.bin_[0]) + 64 > bo_cap):
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
        if plug and (a == A_Q or a == A_G or a == A_P or a == A_U or a == A_UT):
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
        elif a == A_M or a == A_F:
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
        elif a == A_A:
            if sec >= 0:
                S.d_remap[k1(dev, sec)] = (ev[i, E_RMAJ], ev[i, E_RMIN], ev[i, E_RSEC])
        if a == A_D or a == A_R or a == A_C:
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
def flush_end(S, dev, sec, t):
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
def bio_done(S, dev, sec, nsec, t):
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
def finish(S):
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
