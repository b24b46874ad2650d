"""The state the compiled pass keeps between events, as one argument (a NamedTuple of arrays and
typed dicts numba can take): see layout.py for the columns of each table."""

from __future__ import annotations

from typing import Any, NamedTuple

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
    d_keys: Any
    d_groups: Any
    d_chain: Any
    d_gid: Any
    d_cov: Any
    d_fifo: Any
    d_flushq: Any
    d_lastfe: Any
    d_fewait: Any
    d_remap: Any
    d_biowait: Any
    d_pids: Any
