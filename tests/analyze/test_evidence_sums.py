"""The attribution's sums over pairs of intervals (analyze/evidence.py), taken by a sweep over
the sorted ends, against the pair-by-pair definition they replace."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from blkscope.analyze.evidence import _completions_within, _overlap_total

# intervals as (start, length): negative lengths are empty intervals, ends may tie
intervals = st.lists(st.tuples(st.integers(-60, 60), st.integers(-10, 50)), max_size=30)


def _ends(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([s for s, _ in pairs], np.int64)
    return lo, lo + np.array([n for _, n in pairs], np.int64)


@given(intervals, intervals)
def test_overlap_total_is_the_sum_over_every_pair(first: list, second: list) -> None:
    lo, hi = _ends(first)
    a, e = _ends(second)
    pairs = sum(
        max(0, min(int(h), int(y)) - max(int(x0), int(x)))
        for x0, h in zip(lo, hi, strict=True)
        for x, y in zip(a, e, strict=True)
    )
    assert _overlap_total(lo, hi, a, e) == float(pairs)


def test_overlap_total_past_int64() -> None:
    """3,000 x 3,000 pairs overlapping for 2^40 ns each: 9.9e18 ns, past int64's 9.2e18."""
    lo = np.zeros(3000, np.int64)
    hi = np.full(3000, 1 << 40, np.int64)
    assert _overlap_total(lo, hi, lo, hi) == float(3000 * 3000 * (1 << 40))


@given(st.lists(st.integers(-70, 70), max_size=30), intervals)
def test_completions_within_counts_each_interval(done: list[int], spans: list) -> None:
    c = np.array(done, np.int64)
    lo, hi = _ends(spans)
    expected = sum(int(((c > x) & (c <= y)).sum()) for x, y in zip(lo, hi, strict=True))
    assert _completions_within(c, lo, hi) == float(expected)


@given(intervals, intervals, st.integers(0, 62))
def test_overlap_total_far_from_zero(first: list, second: list, shift: int) -> None:
    """The same sums for times near int64's ends (the sweep in Python integers takes them)."""
    lo, hi = _ends(first)
    a, e = _ends(second)
    offset = (1 << shift) - 1 - 200
    assert _overlap_total(lo + offset, hi + offset, a + offset, e + offset) == _overlap_total(
        lo, hi, a, e
    )
