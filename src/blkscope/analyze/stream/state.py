"""The state the compiled pass keeps between events, as one argument (a NamedTuple of int64
arrays): see layout.py for the columns of each pool, keyed.py for the keyed tables (d_*)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class State(NamedTuple):
    """Everything the compiled pass keeps between events (see layout.py for the columns)."""

    gr: np.ndarray
    grf: np.ndarray
    gra: np.ndarray
    grn: np.ndarray
    ky: np.ndarray
    kyf: np.ndarray
    kya: np.ndarray
    kyn: np.ndarray
    bi: np.ndarray
    bif: np.ndarray
    bia: np.ndarray
    bin_: np.ndarray
    pc: np.ndarray
    pcf: np.ndarray
    pca: np.ndarray
    pcn: np.ndarray
    ss: np.ndarray
    ssf: np.ndarray
    ssa: np.ndarray
    ssn: np.ndarray
    pd: np.ndarray
    pdf: np.ndarray
    pda: np.ndarray
    pdn: np.ndarray
    dv: np.ndarray
    db: np.ndarray
    ct: np.ndarray
    rq: np.ndarray
    bo: np.ndarray
    deferred: np.ndarray
    io: np.ndarray
    d_keys: np.ndarray
    d_groups: np.ndarray
    d_chain: np.ndarray
    d_gid: np.ndarray
    d_cov: np.ndarray
    d_fifo: np.ndarray
    d_flushq: np.ndarray
    d_lastfe: np.ndarray
    d_fewait: np.ndarray
    d_remap: np.ndarray
    d_biowait: np.ndarray
    d_pids: np.ndarray
    d_q2q: np.ndarray  # the time of each Q2Q group's latest Q (stream/q2q.py)
    qclass: np.ndarray  # a Q's op class codes by RWBS code, op and sector (q2q.OpClasses)
