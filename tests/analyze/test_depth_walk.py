"""The depth walk (analyze/stream/depth.py) against the definition it replaced: every step of a
device's step function sorted by (time, delta), a running sum, each row held until the next
(the last until the device's last event), summed per depth and cut at the time bins. C's whose
request had no D are settled afterwards: an orphan's is left out, any other's request is in
flight from the trace start (+1 at t0) until it."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope.analyze.stream import depth as D
from blkscope.analyze.stream import layout as L
from blkscope.analyze.stream.depth_run import DepthWalk
from blkscope.analyze.stream.events import EventCoder
from blkscope.analyze.stream.pools import Pool

Sums = tuple[dict[tuple[int, int], int], dict[tuple[int, int], tuple[int, int, int]]]


def reference(
    steps: dict[int, list[tuple[int, int]]], t0: int, t1: int, geometry: tuple[int, int, int]
) -> Sums:
    """{(key, depth): held} and {(key, bin): (max depth, sum depth * ns, ns)}, as the window
    over _depth_steps computed them."""
    start, width, nbins = geometry
    held: dict[tuple[int, int], int] = defaultdict(int)
    bins: dict[tuple[int, int], tuple[int, int, int]] = {}
    for k, key_steps in steps.items():
        rows = sorted([(t0, 0), *key_steps])
        depth = 0
        for j, (t, delta) in enumerate(rows):
            depth += delta
            b = rows[j + 1][0] if j + 1 < len(rows) else t1
            held[k, depth] += b - t
            if b <= t:
                continue
            for x in range((t - start) // width, min((b - 1 - start) // width, nbins - 1) + 1):
                ns = min(b, start + (x + 1) * width) - max(t, start + x * width)
                top, dns, total = bins.get((k, x), (depth, 0, 0))
                bins[k, x] = (max(top, depth), dns + depth * ns, total + ns)
    return dict(held), bins


def walked(walk: DepthWalk, orphans: np.ndarray) -> Sums:
    times, per_bin = walk.settle(orphans)
    held: dict[tuple[int, int], int] = defaultdict(int)
    for k, depth, ns in zip(times["key"], times["depth"], times["held_ns"], strict=True):
        held[int(k), int(depth)] += int(ns)
    bins: dict[tuple[int, int], tuple[int, int, int]] = {}
    for k, x, top, dns, ns in zip(*(per_bin[c] for c in per_bin), strict=True):
        old = bins.get((int(k), int(x)), (int(top), 0, 0))
        bins[int(k), int(x)] = (max(old[0], int(top)), old[1] + int(dns), old[2] + int(ns))
    return dict(held), bins


STEP = st.tuples(st.integers(0, 60), st.sampled_from([-1, 1, 1, D.S_BOUNDARY]))


@settings(max_examples=300, deadline=None)
@given(
    driver=st.lists(STEP, max_size=40),
    queue=st.lists(st.tuples(st.integers(0, 60), st.sampled_from([-1, 1])), max_size=40),
    orphan_mask=st.integers(0, 2**40),
    whole=st.integers(0, 2),
    width=st.integers(1, 9),
    t0=st.integers(0, 5),
    tail=st.integers(0, 4),
    cuts=st.lists(st.integers(0, 70), max_size=3),
    late_mask=st.integers(0, 2**40),
    seed=st.integers(0, 2**32 - 1),
)
def test_walk_matches_the_sorted_window(
    driver: list[tuple[int, int]],
    queue: list[tuple[int, int]],
    orphan_mask: int,
    whole: int,
    width: int,
    t0: int,
    tail: int,
    cuts: list[int],
    late_mask: int,
    seed: int,
) -> None:
    driver = [(t0 + t, w) for t, w in driver]
    queue = [(t0 + t, w) for t, w in queue]
    t1 = max([t0] + [t for t, _ in driver + queue]) + tail
    start = t0 - t0 % width
    geometry = (start, width, (t1 - start) // width + 1)
    # the pass's order: time order, ties in any order
    rng = np.random.default_rng(seed)
    pend = [(t, 0, w, 1000 + j) for j, (t, w) in enumerate(driver)]
    # bios written at the trace end with their own C's earlier time (waiting for a flush end)
    late = [t for j, (t, w) in enumerate(queue) if w == -1 and late_mask >> j & 1]
    pend += [(t, 1, w, 0) for j, (t, w) in enumerate(queue) if not (w == -1 and late_mask >> j & 1)]
    pend.sort(key=lambda s: (s[0], rng.random()))
    orphans = np.array(
        [1000 + j for j, (_, w) in enumerate(driver) if w == D.S_BOUNDARY and orphan_mask >> j & 1]
    )

    coder = EventCoder()
    coder.devices.encode(np.array([8]), np.array([16]))
    dv = np.zeros((1, L.DV_FIELDS), dtype=np.int64)
    walk = DepthWalk(coder, dv, [(8, 16, t0, t1, *geometry)])
    # tiny arrays: growing them is part of what is tested
    walk.W = walk.W._replace(held=np.zeros((2, 2), dtype=np.int64), out=walk.W.out[:3])
    walk.W.ct[D.C_OFF] = 1
    walk.whole[0] = whole
    walk._pend_room(len(pend))
    for j, row in enumerate(pend):
        walk.W.pend[j] = row
    walk.W.ct[D.C_PEND_N] = len(pend)
    for until in sorted(cuts):  # the pass's horizons: walk part, keep the rest pending
        bios = Pool(L.BI_FIELDS, capacity=2)  # a bio waiting (its pieces settled) since `until`
        bios.alive[1] = 1
        bios.rows[1, L.BI_PENDING] = 0
        bios.rows[1, L.BI_C_T] = min([t0 + until, *late])
        walk._step(D.DO_WALK, bios=bios)
    walk.done.append(np.array([(t, 1) for t in late], dtype=np.int64).reshape(-1, 2))
    walk.end()

    steps: dict[int, list[tuple[int, int]]] = {0: [(t0, 1)] * whole, 1: list(queue)}
    for j, (t, w) in enumerate(driver):
        if w != D.S_BOUNDARY:
            steps[0].append((t, w))
        elif 1000 + j not in orphans:
            steps[0] += [(t0, 1), (t, -1)]
    assert walked(walk, orphans) == reference(steps, t0, t1, geometry)


def test_a_moment_applies_its_minus_ones_then_zeros_then_plus_ones() -> None:
    """From depth 2 with two -1s, a 0 and three +1s: 1, 0, 0, 1, 2, 3 (every one visited)."""
    assert D.visit_range(2, 2, 1, 3) == (0, 3)
    assert D.visit_range(2, 0, 0, 1) == (3, 3)  # only a +1: the depth before is not a row
    assert D.visit_range(2, 1, 0, 0) == (1, 1)
    assert D.visit_range(0, 0, 1, 0) == (0, 0)
