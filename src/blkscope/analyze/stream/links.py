"""Which request each landed piece rode in (main's _bio_nodes/_bio_pieces/_piece_requests.sql):
the node after a Q on its start sector says where it went (G new request, M/F merged, X split,
another Q: lost unseen); a G's request is the next D on its sector via its I; merged pieces, and
G's whose request lost its start to a front merge, take the first later D covering them (btt's
rule); data-less flush G's pair with flush D's first in, first out."""

from __future__ import annotations

import numpy as np

from blkscope.analyze.stream.bios import _lost, cov_remove, finalize_piece
from blkscope.analyze.stream.jit import inline_kernel
from blkscope.analyze.stream.keyed import tab_find, tab_get, tab_pop, tab_put, tab_remove
from blkscope.analyze.stream.layout import (
    A_D,
    A_F,
    A_G,
    A_I,
    A_M,
    A_X,
    BI_G_T,
    BI_M_T,
    BI_MERGED,
    CT_DB_N,
    DB_CAP,
    DB_DEV,
    DB_EID,
    DB_GROUP,
    DB_NSEC,
    DB_SEC,
    DV_FIFO_LAST,
    DV_FIFO_ND,
    DV_FIFO_NG,
    DV_FIFO_RUN,
    E_COMM,
    E_NSEC,
    E_PID,
    E_SEC,
    E_T,
    GR_CANDS,
    GR_D_EID,
    GR_PIECES,
    GR_STATE,
    PC_BIO,
    PC_CAND,
    PC_CAND_EID,
    PC_CHAIN,
    PC_COMM,
    PC_COV_KEY,
    PC_COV_NEXT,
    PC_COV_PREV,
    PC_D_EID,
    PC_G_CLOCK,
    PC_GPHASE,
    PC_GROUP,
    PC_I_T,
    PC_LAND,
    PC_LAND_T,
    PC_NEXT_CAND,
    PC_NEXT_REQ,
    PC_NSEC,
    PC_PHASE,
    PC_PID,
    PC_REFS,
    PC_SEC,
    ST_BUILDING,
)
from blkscope.analyze.stream.pools import k1, nmin
from blkscope.analyze.stream.state import State


@inline_kernel
def cov_found(S: State, p: int, eid: int, g: int) -> None:
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


@inline_kernel
def cov_register(S: State, p: int, dev: int) -> None:
    """Piece p (merged, or a G that may lose its request's start to a front merge) waits for
    the first D on its device covering it (btt's rule, time-ordered: _piece_requests.sql)."""
    sec, n = S.pc[p, PC_SEC], S.pc[p, PC_NSEC]
    for i in range(S.ct[CT_DB_N]):  # a D at this very nanosecond, logged just before
        db = S.db
        if (
            db[i, DB_DEV] == dev
            and db[i, DB_SEC] <= sec
            and db[i, DB_SEC] + db[i, DB_NSEC] >= sec + n
        ):
            g = db[i, DB_GROUP]
            if g >= 0 and (S.gra[g] == 0 or S.gr[g, GR_D_EID] != db[i, DB_EID]):
                g = -1
            cov_found(S, p, db[i, DB_EID], g)
            return
    key = (dev << 48) | (sec >> 12)
    head = tab_get(S.d_cov, key, 0, -1)
    S.pc[p, PC_COV_PREV] = -1
    S.pc[p, PC_COV_NEXT] = head
    if head >= 0:
        S.pc[head, PC_COV_PREV] = p
    tab_put(S.d_cov, key, 0, p)
    S.pc[p, PC_COV_KEY] = key


@inline_kernel
def cov_dispatch(S: State, dev: int, eid: int, sec: int, n: int, g: int) -> None:
    """A D on the device: it is the covering D of every waiting piece inside its range."""
    for block in range(sec >> 12, ((sec + n) >> 12) + 1):
        p = tab_get(S.d_cov, (dev << 48) | block, 0, -1)
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


@inline_kernel
def link(S: State, p: int, eid: int, g: int) -> None:
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


@inline_kernel
def gid_event(S: State, dev: int, ksec: int, a: int, t: int, eid: int, g: int) -> None:
    """A G, I or D on (device, sector): the next event after a waiting G there."""
    key = k1(dev, ksec)
    s = tab_find(S.d_gid, key, 0)
    if s < 0:
        return
    p = S.d_gid[s, 2]
    pc = S.pc
    if pc[p, PC_GPHASE] == 1 and a == A_I:
        pc[p, PC_I_T] = t
        pc[p, PC_GPHASE] = 2
        return
    tab_remove(S.d_gid, s)
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


@inline_kernel
def fifo_g(S: State, dev: int, p: int) -> None:
    dv = S.dv
    if dv[dev, DV_FIFO_LAST] == A_D:  # a G after a D opens a new run
        run = dv[dev, DV_FIFO_RUN]
        for n in range(dv[dev, DV_FIFO_ND] + 1, dv[dev, DV_FIFO_NG] + 1):
            left = tab_pop(S.d_fifo, (dev << 48) | run, n, -1)
            if left >= 0:
                finalize_piece(S, left, -1)
        dv[dev, DV_FIFO_RUN] = run + 1
        dv[dev, DV_FIFO_NG] = 0
        dv[dev, DV_FIFO_ND] = 0
    dv[dev, DV_FIFO_NG] += 1
    tab_put(S.d_fifo, (dev << 48) | dv[dev, DV_FIFO_RUN], dv[dev, DV_FIFO_NG], p)
    dv[dev, DV_FIFO_LAST] = A_G


@inline_kernel
def fifo_d(S: State, dev: int, eid: int, g: int) -> None:
    dv = S.dv
    dv[dev, DV_FIFO_ND] += 1
    p = tab_pop(S.d_fifo, (dev << 48) | dv[dev, DV_FIFO_RUN], dv[dev, DV_FIFO_ND], -1)
    if p >= 0:
        link(S, p, eid, g)
    dv[dev, DV_FIFO_LAST] = A_D


@inline_kernel
def chain_node(S: State, dev: int, ksec: int, a: int) -> tuple[int, int]:
    """A node (Q G M F X, or S: a split's remainder) on (device, start sector): it is what
    happened next to a piece waiting there. Return (piece landing on this G/M/F, piece whose
    split this X is), each -1 if none."""
    key = k1(dev, ksec)
    s = tab_find(S.d_chain, key, 0)
    if s < 0:
        return -1, -1
    w = S.d_chain[s, 2]
    if S.pc[w, PC_PHASE] == 1 and a == A_X:
        S.pc[w, PC_PHASE] = 2  # the head piece lands on the node after the X
        return -1, w
    tab_remove(S.d_chain, s)
    if a in (A_G, A_M, A_F):
        return w, -1
    _lost(S, w)  # a Q or a remainder start came first: the piece was re-queued unseen
    return -1, -1


@inline_kernel
def land(S: State, p: int, ev: np.ndarray, i: int, a: int, dev: int, g_clock: int) -> None:
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
        tab_put(S.d_gid, k1(dev, sec), 0, p)
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
