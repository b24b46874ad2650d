"""The plug clock, streamed: the clock the kernel's disk statistics (iostat's await, aqu-sz) start
each bio on.

Since Linux 6.9 blk_time_get_ns() caches the first time read inside a plug (plug->cur_ktime) and
hands that same value to every request allocated until the cache is cleared, which happens only
when the plug is flushed at blk_finish_plug or when the task schedules (U / UT), not when
blk_add_rq_to_plug flushes a full plug (U followed by P for the next request). So a writeback
kworker's whole plug of requests starts at its FIRST Q: measured against 5 ms samples of
/sys/block/vda/stat, Q..C alone missed 25.7 ms of 236 ms in one flusher burst. A task that
sleeps with an empty plug clears the cache without a trace event: a pause of more than 5 ms
between its events is taken as such a sleep. A task that slept between a bio's Q and its
request's G (throttled, or waiting for a tag: 263 ms under bfq) starts the request's clock after
waking, so each G also gets the clock of its own session.

A session starts at a task's first event, after a pause, after a UT, and after a U that is not a
full-plug flush (one followed, past one more U, by the P of the next plug: one event of
lookahead, kept per task). A Q's clock is its session's first Q when the session holds a P,
else its own time; a G's is its session's first Q or G. A session row lives while an open
request's piece still refers to it (tests/analyze/test_kernel_await.py pins the result against
the kernel's own counters)."""

from __future__ import annotations

from blkscope.analyze.stream.jit import inline_kernel, kernel
from blkscope.analyze.stream.keyed import EMPTY, tab_get, tab_put, tab_remove
from blkscope.analyze.stream.layout import (
    A_G,
    A_P,
    A_Q,
    A_U,
    A_UT,
    NULL,
    PD_LAST_A,
    PD_LAST_T,
    PD_PENDING,
    PD_SESS,
    SS_CLOSED,
    SS_FIRST_Q,
    SS_FIRST_QG,
    SS_PLUGGED,
    SS_REFS,
)
from blkscope.analyze.stream.pools import give, take
from blkscope.analyze.stream.state import State

FIVE_MS = 5_000_000


@kernel
def _session_release(S: State, s: int) -> None:
    S.ss[s, SS_REFS] -= 1
    if S.ss[s, SS_REFS] == 0:
        give(s, S.ssf, S.ssa, S.ssn)


@kernel
def _session_close(S: State, s: int) -> None:
    if s >= 0 and S.ss[s, SS_CLOSED] == 0:
        S.ss[s, SS_CLOSED] = 1
        _session_release(S, s)  # the reference the open session held


@kernel
def _session_open(S: State) -> int:
    s = take(S.ss, S.ssf, S.ssa, S.ssn)
    S.ss[s, SS_PLUGGED] = 0
    S.ss[s, SS_CLOSED] = 0
    S.ss[s, SS_REFS] = 1
    return s


@inline_kernel
def plug_event(S: State, pid: int, a: int, t: int) -> int:
    """The session (row of S.ss) the task's event falls in (the rules above)."""
    slot = tab_get(S.d_pids, pid, 0, -1)
    if slot < 0:
        slot = take(S.pd, S.pdf, S.pda, S.pdn)
        tab_put(S.d_pids, pid, 0, slot)
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


@kernel
def close_idle_sessions(S: State, now: int, everything: bool) -> None:
    """A task quiet for more than 5 ms starts a new session with its next event: its current
    one is final now (and the task's record can go)."""
    pids = S.d_pids
    j = 0
    while j < pids.shape[0] - 1:
        slot = pids[j, 2]
        if pids[j, 0] != EMPTY and (everything or now - S.pd[slot, PD_LAST_T] > FIVE_MS):
            # removing shifts a later entry of the probe run into j: look at j again
            tab_remove(pids, j)
            _session_close(S, S.pd[slot, PD_SESS])
            give(slot, S.pdf, S.pda, S.pdn)
            continue
        j += 1
