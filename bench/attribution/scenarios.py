"""The scenarios: per (name, seed), the rig a capture needs and its lanes of injections.

Every seed draws other offsets, lengths and intensities (random.Random(f"{name}-{seed}")), so
three runs of a scenario are three different timings. Injections in one lane never overlap;
the mixes run two lanes whose injections overlap on purpose.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from rig import RigSpec

DURATION_S = 45.0
MIN_GAP_S = 4.0  # quiet time after each injection, so a window of nothing follows each cause


@dataclass(frozen=True)
class Plan:
    rig: RigSpec
    lanes: list[list[dict]]
    duration_s: float = DURATION_S
    min_gap_s: float = MIN_GAP_S


def _u(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 2)


def _at(rng: random.Random, n: int, first: tuple[float, float] = (5, 8),
        gap: tuple[float, float] = (9, 13)) -> list[float]:  # fmt: skip
    """n start offsets (s after T0): a quiet lead-in, then one every `gap` seconds."""
    at = [_u(rng, *first)]
    for _ in range(n - 1):
        at.append(round(at[-1] + rng.uniform(*gap), 2))
    return at


def _item(kind: str, at_s: float, **params) -> dict:
    return {"kind": kind, "at_s": at_s, "params": params}


def writeback_periodic(rng: random.Random) -> Plan:
    expire = rng.choice((100, 150, 200, 300))
    lane = [_item("flusher", at, mib=rng.randrange(48, 161, 16), mode="periodic")
            for at in _at(rng, 3)]  # fmt: skip
    sysctls = {"dirty_expire_centisecs": expire, "dirty_writeback_centisecs": 100}
    return Plan(RigSpec(sysctls=sysctls), [lane])


def writeback_background(rng: random.Random) -> Plan:
    threshold = rng.choice((16, 24, 32, 48)) << 20
    lane = [_item("flusher", at, mib=rng.randrange(96, 193, 16), mode="background")
            for at in _at(rng, 3)]  # fmt: skip
    # The last pages under the background threshold go out by periodic writeback, soon.
    sysctls = {"dirty_background_bytes": threshold, "dirty_expire_centisecs": 300,
               "dirty_writeback_centisecs": 100}  # fmt: skip
    return Plan(RigSpec(sysctls=sysctls), [lane])


def explicit_sync(rng: random.Random) -> Plan:
    lane = [_item("sync", at, mib=rng.randrange(32, 129, 16), delay_s=_u(rng, 0.5, 3.0))
            for at in _at(rng, 3)]  # fmt: skip
    return Plan(RigSpec(), [lane])


def journal(rng: random.Random) -> Plan:
    lane = [_item("journal", at, mib=rng.randrange(24, 97, 8), fsyncs=rng.randrange(20, 81, 10),
                  delay_s=_u(rng, 0.1, 0.5)) for at in _at(rng, 3)]  # fmt: skip
    return Plan(RigSpec(mount_options="lazytime,data=ordered,nodelalloc"), [lane])


def _reader(rng: random.Random, at: float) -> dict:
    """A reader that fills UPPER's queue: reads and writes are throttled apart on LOWER and meet
    only in UPPER's 32 tags, so readers below qd32 (dd at qd1, fio at qd8/16) left the prober's
    p99 as it was in the first runs; at qd32 and up it waits for a tag."""
    rw = rng.choice(("randread", "read"))
    bs = rng.choice(("4k", "16k", "64k", "1m"))
    return _item("fio", at, rw=rw, bs=bs, iodepth=rng.choice((32, 48, 64)),
                 seconds=_u(rng, 1.5, 4))  # fmt: skip


def _writer(rng: random.Random, at: float, cgroup: str | None = None) -> dict:
    if rng.random() < 0.3:
        return _item("dd", at, direction="write", bs_kib=1024, seconds=_u(rng, 2, 4),
                     cgroup=cgroup)  # fmt: skip
    bs = rng.choice(("4k", "64k"))
    return _item("fio", at, rw="randwrite", bs=bs, iodepth=rng.choice((4, 8, 16)),
                 seconds=_u(rng, 1.5, 4), cgroup=cgroup)  # fmt: skip


def competing_read(rng: random.Random) -> Plan:
    return Plan(RigSpec(), [[_reader(rng, at) for at in _at(rng, 3)]])


def competing_write(rng: random.Random) -> Plan:
    return Plan(RigSpec(), [[_writer(rng, at) for at in _at(rng, 3)]])


def _throttle(rng: random.Random, at: float) -> dict:
    if rng.random() < 0.5:
        return _item("throttle", at, mode="iops", value=rng.randrange(4, 13),
                     seconds=_u(rng, 2, 5))  # fmt: skip
    return _item("throttle", at, mode="bps", value=rng.randrange(20, 101, 10) << 10,
                 seconds=_u(rng, 2, 5))  # fmt: skip


def throttling(rng: random.Random) -> Plan:
    return Plan(RigSpec(), [[_throttle(rng, at) for at in _at(rng, 3)]])


def scheduler(rng: random.Random) -> Plan:
    lane = [_item("scheduler", at, seconds=_u(rng, 2, 5), rw=rng.choice(("randread", "randwrite")),
                  prober_weight=rng.choice((10, 20, 50)), competitor_weight=rng.choice((500, 1000)))
            for at in _at(rng, 3)]  # fmt: skip
    return Plan(RigSpec(scheduler="bfq", rotational=1), [lane])


def device(rng: random.Random) -> Plan:
    lane = [_item("device", at, iops=rng.randrange(15, 61, 5), bps=rng.randrange(256, 1025, 128)
                  << 10, seconds=_u(rng, 2, 5)) for at in _at(rng, 3)]  # fmt: skip
    return Plan(RigSpec(), [lane])


def mix_writeback_read(rng: random.Random) -> Plan:
    """Periodic writeback, and a reader burst that starts while the flusher writes."""
    expire = rng.choice((100, 200))
    at = _at(rng, 2, gap=(16, 19))
    wb = [_item("flusher", a, mib=rng.randrange(128, 193, 16), mode="periodic") for a in at]
    # The flusher starts expire .. expire + 1 s after the dirtying: the reader joins then.
    reads = [_reader(rng, round(a + expire / 100 + _u(rng, 0.3, 1.2), 2)) for a in at]
    sysctls = {"dirty_expire_centisecs": expire, "dirty_writeback_centisecs": 100}
    return Plan(RigSpec(sysctls=sysctls), [wb, reads], min_gap_s=0.0)


def mix_throttle_write(rng: random.Random) -> Plan:
    """The prober throttled, and a writer in the same cgroup (so it spends the same budget)
    that overlaps part of the window: a noisy neighbour in a throttled container."""
    at = _at(rng, 2, gap=(16, 19))
    thr = [_item("throttle", a, mode="iops", value=rng.randrange(6, 13), seconds=_u(rng, 4, 6))
           for a in at]  # fmt: skip
    writes = [_writer(rng, round(a + _u(rng, 1, 3), 2), cgroup="prober") for a in at]
    return Plan(RigSpec(), [thr, writes], min_gap_s=0.0)


def control(rng: random.Random) -> Plan:
    """Nothing injected: the prober alone (bfq or none, drawn)."""
    if rng.random() < 0.5:
        return Plan(RigSpec(scheduler="bfq", rotational=1), [])
    return Plan(RigSpec(), [])


SCENARIOS: dict[str, Callable[[random.Random], Plan]] = {
    "writeback-periodic": writeback_periodic,
    "writeback-background": writeback_background,
    "sync": explicit_sync,
    "journal": journal,
    "competing-read": competing_read,
    "competing-write": competing_write,
    "throttling": throttling,
    "scheduler": scheduler,
    "device": device,
    "mix-writeback-read": mix_writeback_read,
    "mix-throttle-write": mix_throttle_write,
    "control": control,
}

SEEDS: dict[str, tuple[int, ...]] = {name: (1, 2, 3) for name in SCENARIOS}
SEEDS["control"] = (1, 2, 3, 4)


def plan(name: str, seed: int) -> Plan:
    return SCENARIOS[name](random.Random(f"{name}-{seed}"))
