"""The streaming pass's vocabulary: event codes, null sentinels, and the columns of its state
and output tables (int64 matrices indexed by these constants, so that one compiled function can
hold every table without numba's experimental classes)."""

from __future__ import annotations

# ---- nulls: times, pids and errors are int64 with this sentinel; sectors use -1 ----
NULL = -9223372036854775808

# ---- action codes (events.action) ----
A_Q, A_G, A_I, A_D, A_C, A_M, A_F, A_X, A_A, A_R, A_P, A_U, A_UT = range(1, 14)
ACTIONS = {"Q": A_Q, "G": A_G, "I": A_I, "D": A_D, "C": A_C, "M": A_M, "F": A_F, "X": A_X,
           "A": A_A, "R": A_R, "P": A_P, "U": A_U, "UT": A_UT}  # fmt: skip
# ---- op codes (events.op); F is a flush request's op in `requests` ----
OPS = ["R", "W", "D", "N", "F"]
OP_N, OP_F = 3, 4

# ---- event columns (the rows of the int64 matrix one batch arrives in) ----
E_T, E_EID, E_DEV, E_ACT, E_OP, E_FLUSH, E_RWBS, E_SEC, E_NSEC, E_SPLIT = range(10)
E_RMAJ, E_RMIN, E_RSEC, E_ERR, E_PID, E_COMM = range(10, 16)
E_DLESS = 16  # set by the pass on a C whose request had no D (stream/depth.py reads it)
E_FIELDS = 17

# ---- request kinds ----
KINDS = ["data", "flush", "flush_end", "bio", "orphan"]
K_DATA, K_FLUSH, K_FLUSH_END, K_BIO, K_ORPHAN = range(5)

# ---- per-key request pairing state (KY): one row per (device, sector, length) in flight ----
KY_RUN, KY_PREV, KY_ISSUED, KY_CS, KY_MAXORD, KY_KA, KY_KB = range(7)
KY_FIELDS = 7

# ---- request groups (GR): one row per request being built ----
(GR_DEV, GR_KSEC, GR_KLEN, GR_ISFLUSH, GR_MIN_EID, GR_OP, GR_RWBS, GR_FIRST_D, GR_LAST_D,
 GR_C_T, GR_C_EID, GR_ERR, GR_REQUEUES, GR_DISPATCHES, GR_D_EID, GR_D_COMM, GR_FLUSH_END,
 GR_RUN, GR_STATE, GR_PIECES, GR_CANDS, GR_FIX, GR_NEXT, GR_FLUSH_Q) = range(24)  # fmt: skip
GR_FIELDS = 24
# GR_STATE: building, done (its bios heard of it), waiting (for a plug clock to settle)
ST_BUILDING, ST_DONE, ST_WAITING = 0, 1, 2

# ---- bios (BI): one row per Q in flight ----
(BI_DEV, BI_Q_EID, BI_Q_T, BI_OP, BI_RWBS, BI_SEC, BI_NSEC, BI_PID, BI_COMM, BI_FLUSH,
 BI_PENDING, BI_PIECES, BI_MERGED, BI_CUT, BI_G_T, BI_M_T, BI_I_T, BI_D_T, BI_C_T,
 BI_REQUEUES, BI_D_EID, BI_RMAJ, BI_RMIN, BI_RSEC, BI_FE_T, BI_BIO_C, BI_WAIT,
 BI_NEXT, BI_SID, BI_FIRST_Q) = range(30)  # fmt: skip
# the Q2Q gaps at the bio's Q, per scope: process, class, op, device (stream/q2q.py)
BI_Q2Q = 30
BI_FIELDS = 34
# BI_WAIT: what a finished bio still waits for
W_NONE, W_FLUSH_END, W_BIO_C = 0, 1, 2

# ---- pieces (PC): one row per piece of a bio (the Q's, and one per split remainder) ----
(PC_BIO, PC_PHASE, PC_LAND, PC_LAND_T, PC_SEC, PC_NSEC, PC_PID, PC_COMM, PC_I_T, PC_GPHASE,
 PC_CAND, PC_CAND_EID, PC_GROUP, PC_D_EID, PC_NEXT_REQ, PC_NEXT_CAND, PC_COV_PREV,
 PC_COV_NEXT, PC_COV_KEY, PC_Q_T, PC_SID, PC_FIRST_Q, PC_G_CLOCK, PC_REFS, PC_FINAL,
 PC_CHAIN) = range(26)  # fmt: skip
PC_FIELDS = 26

# ---- plug sessions (SS) and submitting tasks (PD) ----
SS_FIRST_Q, SS_FIRST_QG, SS_PLUGGED, SS_CLOSED, SS_REFS = range(5)
SS_FIELDS = 5
PD_SESS, PD_LAST_A, PD_LAST_T, PD_PENDING = range(4)
PD_FIELDS = 4

# ---- output rows ----
(RQ_DEV, RQ_OP, RQ_SEC, RQ_NSEC, RQ_KIND, RQ_RWBS, RQ_Q_T, RQ_G_T, RQ_ACCT, RQ_FIRST_D,
 RQ_LAST_D, RQ_C_T, RQ_REQUEUES, RQ_DISPATCHES, RQ_ERR, RQ_PARTIAL, RQ_PID, RQ_PROCESS,
 RQ_D_EID, RQ_C_EID, RQ_FIX) = range(21)  # fmt: skip
RQ_FIELDS = 21
(BO_DEV, BO_OP, BO_RWBS, BO_SEC, BO_NSEC, BO_PID, BO_COMM, BO_Q_T, BO_G_T, BO_M_T, BO_I_T,
 BO_D_T, BO_C_T, BO_D2C, BO_MERGED, BO_PIECES, BO_REQUEUES, BO_PARTIAL, BO_RMAJ, BO_RMIN,
 BO_RSEC, BO_Q_EID, BO_D_EID) = range(23)  # fmt: skip
BO_Q2Q = 23  # its four Q2Q gaps (BI_Q2Q)
BO_FIELDS = 27

# ---- counters (CT): pool tops and statistics ----
(CT_RQ_N, CT_BO_N, CT_NOW, CT_DEF_N, CT_DB_N, CT_PLUG, CT_R_NEW, CT_STOPPED_AT,
 CT_EVENTS) = range(9)  # fmt: skip
CT_FIELDS = 9

# ---- devices (DV): what the whole trace holds per device, and its flush FIFO ----
DV_HAS_D, DV_NODES, DV_FIFO_RUN, DV_FIFO_NG, DV_FIFO_ND, DV_FIFO_LAST = range(6)
# where the device's previous Q and D (with a sector and a length) ended: io_dist's seeks
DV_Q_END, DV_D_END = 6, 7
DV_FIELDS = 8
# ---- D events at the current nanosecond (DB), for merges landing at the same time ----
DB_DEV, DB_EID, DB_SEC, DB_NSEC, DB_GROUP = range(5)
DB_FIELDS = 5
DB_CAP = 256

# ---- io_dist counts (IO): one row per (device, op, metric, log2 bucket + 1), see io_dist_row ----
IO_METRICS = ("q_size", "d_size", "d2d_seek", "q2q_seek")
IO_METRIC_COUNT = len(IO_METRICS)
M_Q_SIZE, M_D_SIZE, M_D2D_SEEK, M_Q2Q_SEEK = range(4)
IO_BUCKETS = 65  # log2 buckets -1 (v <= 0) to 63
IO_N, IO_TOTAL = range(2)
IO_FIELDS = 2
