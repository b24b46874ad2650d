"""Name an episode's cause (concepts.CAUSES) from its evidence, and say why, candidate by
candidate: what each had in flight or where the victim's time went, and why it was or was not
chosen.

Two questions decide. Where did the victim's extra time go (above the block layer, queued in
it, at the device, or after its own IO)? And what else was in flight meanwhile, against its own
normal level? A load explains queueing and device time when it is a large share of what was in
flight and well above its normal; with no such load, time queued while the device sat idle is
the scheduler's, and device time with the queue to itself is the device's. Time above the block
layer is throttling when blk-throttle or iocost said so in the trace.
"""

from __future__ import annotations

from dataclasses import dataclass

from blkscope.analyze.evidence import STAGE_WORDS, STAGES, Evidence, Load
from blkscope.units import format_bytes, format_ns, format_share

# A load explains the victim's wait when it carried this share of the bytes, or of the IOs,
# in flight ...
LOAD_BYTES_SHARE = 0.3
LOAD_IOS_SHARE = 0.5
# ... at this many times its own normal level, in that same measure ...
LOAD_ABOVE_NORMAL = 2.0
# ... and had at least this many IOs in flight on average, or queued in the window (one stray
# IO is not a load).
LOAD_MIN_IOS = {"in flight": 0.5, "queued": 4.0}
# A stage dominates when it holds this share of the victim's extra time.
STAGE_SHARE = 0.5
# The queue is light when, on average, fewer other IOs than this were at the device with the
# victim's.
LIGHT_QUEUE = 1.0
# The scheduler held the victim back when it queued this many times longer than a
# first-come-first-served queue would have made it wait behind the same IO (evidence.py).
UNFAIR_WAIT = 10.0
# IO the victim waited on was slowed by the device when its bios, small ones, took this many
# times the device's median D2C there, with fewer than FEW_AT_DEVICE IOs at the device.
SLOW_DEVICE = 10.0
SMALL_BIO_BYTES = 64 << 10
FEW_AT_DEVICE = 4.0
# A queue wait below this is never the scheduler's doing, however unfair the ratio.
MIN_FAIR_WAIT_NS = 100_000
# The scheduler or the device is blamed from the victim's own timing alone, with nothing else
# in flight to point at: one stall among many fast IOs says nothing beyond chance, a run of
# separate stalls does (a slow write and the flush waiting behind it are one stall).
MIN_STALLS_FOR_OWN_TIMING = 3
CAUSE_OF_LOAD = {"writeback": "writeback", "journal": "journal", "process": "competing_io"}


@dataclass(frozen=True)
class Verdict:
    """The cause (CAUSES names joined by '+', strongest first) and the sentence behind it."""

    cause: str
    reason: str


def heavy_loads(ev: Evidence) -> list[Load]:
    """The loads that explain the victim's wait (see the module doc), strongest first."""
    return _heavy(ev.loads, ev.victim_bytes, ev.victim_ios, ev.load_basis)


def _heavy(loads: list[Load], victim_bytes: float, victim_ios: float, basis: str) -> list[Load]:
    """Loads big and raised in the same measure: in bytes (bandwidth) or in IOs (IOPS)."""
    total_bytes = victim_bytes + sum(x.bytes for x in loads)
    total_ios = victim_ios + sum(x.ios for x in loads)
    heavy = []
    for load in loads:
        share_bytes = load.bytes / total_bytes if total_bytes else 0.0
        share_ios = load.ios / total_ios if total_ios else 0.0
        by_bytes = (
            share_bytes >= LOAD_BYTES_SHARE and load.bytes >= LOAD_ABOVE_NORMAL * load.normal_bytes
        )
        by_ios = share_ios >= LOAD_IOS_SHARE and load.ios >= LOAD_ABOVE_NORMAL * load.normal_ios
        if (by_bytes or by_ios) and load.ios >= LOAD_MIN_IOS[basis]:
            heavy.append(load)
    return heavy


def stage_shares(ev: Evidence) -> dict[str, float]:
    """Each stage's share of the victim's extra time (all 0 when it had none)."""
    excess = ev.excess()
    total = sum(excess.values())
    return {s: (excess[s] / total if total else 0.0) for s in STAGES}


def judge(ev: Evidence) -> Verdict:
    """The cause of one episode and its reason (module doc)."""
    if not ev.items:
        return Verdict("unexplained", f"{ev.victim}: no slow IO found to judge")
    shares = stage_shares(ev)
    stage = max(STAGES, key=lambda s: (shares[s], -STAGES.index(s)))
    dominant = shares[stage] >= STAGE_SHARE
    heavy = heavy_loads(ev)
    causes: list[str] = []
    if dominant and stage == "above":
        if ev.throttle_messages:
            causes.append("throttling")
        causes += _loads_above(ev, heavy, dirty_throttled=True)
    elif dominant and stage == "after":
        causes += _loads_above(ev, heavy, dirty_throttled=False)
    elif dominant and stage == "queued" and _unfair(ev) and (heavy or _repeated(ev)):
        causes.append("scheduler")  # whatever was in flight, a fair queue would not wait so
    elif dominant and stage == "device" and heavy and all(_slowed_by_device(ev, x) for x in heavy):
        causes.append("device")  # what else was in flight was slow there too, and light
    else:  # queued, at the device, or spread over stages: what loaded the device
        causes += [CAUSE_OF_LOAD[x.kind] for x in heavy]
        if not causes and _repeated(ev) and dominant and stage == "device" and _alone(ev):
            causes.append("device")
    causes = list(dict.fromkeys(causes)) or ["unexplained"]
    return Verdict("+".join(causes), _reason(ev, shares, heavy, causes))


def _loads_above(ev: Evidence, heavy: list[Load], dirty_throttled: bool) -> list[str]:
    """Causes of time above the block layer or after the victim's own IO: a writer held back
    while writeback wrote pages (dirty throttling, pages under writeback), or a journal commit
    it had to wait for. When the scheduler held that commit's or writeback's own bios back, the
    scheduler comes first: it is why they took so long."""
    waited_on = [x for x in heavy if x.kind != "process"]
    causes = [CAUSE_OF_LOAD[x.kind] for x in waited_on]
    if dirty_throttled and "writeback" not in causes and ev.pages_written:
        causes.append("writeback")
    if any(_held_back(x) for x in waited_on):
        return ["scheduler"]  # the reason names what it held back
    if waited_on and all(_slowed_by_device(ev, x) for x in waited_on):
        return ["device"]  # the commit or writeback the victim waited on was itself slow there
    return causes


def _held_back(load: Load) -> bool:
    """The load's own bios queued many times longer than a fair queue would have kept them."""
    if load.fair_wait_ns is None:
        return False
    return load.queued_ns >= UNFAIR_WAIT * max(load.fair_wait_ns, MIN_FAIR_WAIT_NS)


def _slowed_by_device(ev: Evidence, load: Load) -> bool:
    """The load's own bios, small ones, took many times the device's normal D2C with a few IOs
    at the device: the device, not the load, is why the victim waited on it. (A burst of big
    or many bios is slow at the device by its own weight: that is the load's doing.)"""
    if load.at_device is None or not ev.normal_d2c_ns:
        return False
    slow = load.device_ns >= SLOW_DEVICE * ev.normal_d2c_ns
    return slow and load.bio_bytes <= SMALL_BIO_BYTES and load.at_device < FEW_AT_DEVICE


def _repeated(ev: Evidence) -> bool:
    return ev.stalls >= MIN_STALLS_FOR_OWN_TIMING


def unfairness(ev: Evidence) -> float | None:
    """How many times longer the victim's bios queued than a first-come-first-served queue
    would have made them wait behind the same IO (None when unknown)."""
    if ev.fair_wait_ns is None or not ev.items:
        return None
    queued = ev.stage_ns.get("queued", 0) / ev.items
    # a fair queue still takes the victim's normal queued time
    fair = max(ev.fair_wait_ns, ev.normal_ns.get("queued", 0), MIN_FAIR_WAIT_NS)
    return queued / fair


def _unfair(ev: Evidence) -> bool:
    ratio = unfairness(ev)
    return ratio is not None and ratio >= UNFAIR_WAIT


def _alone(ev: Evidence) -> bool:
    """The queue was light while the victim's bios were at the device: under one other IO
    there on average (heavy loads are handled before this is asked)."""
    return ev.others_at_device is None or ev.others_at_device < LIGHT_QUEUE


def _reason(ev: Evidence, shares: dict[str, float], heavy: list[Load], causes: list[str]) -> str:
    parts = [_victim_sentence(ev, shares)]
    if causes[0] == "throttling":
        parts.append(
            f"the trace holds {ev.throttle_messages:,} blk-throttle/iocost messages for the "
            f"device in the window, e.g. '{ev.throttle_sample}': its IO was held back above "
            "the block layer"
        )
    elif causes[0] == "scheduler":
        parts.append(_scheduler_sentence(ev))
    elif causes[0] == "device" and _device_sentence(ev):
        parts.append(_device_sentence(ev))
    else:
        parts.append(_in_flight_sentence(ev, heavy))
    parts.append("rejected: " + "; ".join(_rejections(ev, shares, heavy, causes)))
    return ". ".join(p for p in parts if p)


def _victim_sentence(ev: Evidence, shares: dict[str, float]) -> str:
    head = f"{ev.victim}: worst {format_ns(ev.worst_ns, ' ')}"
    if not ev.decomposed:
        return head + (
            " (none of its own bios is inside its slow samples, so its time is not split: "
            "throttled bios are queued by blk-throttle's dispatcher thread, not the process)"
            if ev.throttle_messages
            else " (its own IO could not be found in the trace, so its time is not split)"
        )
    spent = [
        f"{format_share(shares[s])} {STAGE_WORDS[s]} ({format_ns(ev.stage_ns[s] / ev.items, ' ')}"
        f" a slow IO, normally {format_ns(ev.normal_ns[s], ' ')})"
        for s in STAGES
        if shares[s] > 0
    ]
    return head + "; its extra time went " + ", ".join(spent) if spent else head


def _device_sentence(ev: Evidence) -> str:
    waited = [x for x in ev.loads if x.kind != "process" and _slowed_by_device(ev, x)]
    if not waited:
        return ""
    x = waited[0]
    return (
        f"the {x.label}'s IO in flight with it ({x.ops}) took {format_ns(x.device_ns, ' ')} at "
        f"the device against the normal {format_ns(ev.normal_d2c_ns, ' ')}, with "
        f"{x.at_device or 0:.1f} IOs there on average: the device was slow"
    )


def _scheduler_sentence(ev: Evidence) -> str:
    held = [x for x in ev.loads if x.kind != "process" and _held_back(x)]
    if held and not _unfair(ev):  # it waited on IO the scheduler held back
        x = held[0]
        return (
            f"it waited on the {x.label}'s IO ({x.ops}), whose bios queued "
            f"{format_ns(x.queued_ns, ' ')} against the {format_ns(x.fair_wait_ns, ' ')} a "
            "first-come-first-served queue would have taken: the IO scheduler held them back"
        )
    ratio = unfairness(ev) or 0.0
    queued = ev.stage_ns.get("queued", 0) / max(ev.items, 1)
    favoured = [x.label for x in ev.loads[:3]]
    return (
        f"its bios queued {format_ns(queued, ' ')} against the "
        f"{format_ns(ev.fair_wait_ns or 0.0, ' ')} a first-come-first-served queue would have "
        "taken behind the IO in flight"
        + (f" ({', '.join(favoured)})" if favoured else "")
        + (f", {ratio:.0f}x longer" if ratio != float("inf") else "")
        + ": the IO scheduler held them back"
    )


def _load_words(load: Load, total_bytes: float, total_ios: float, basis: str) -> str:
    share = load.bytes / total_bytes if total_bytes else 0.0
    ios_share = load.ios / total_ios if total_ios else 0.0
    amount = (
        f"{format_bytes(load.bytes)} on average (normally {format_bytes(load.normal_bytes)})"
        if basis == "in flight"
        else f"{format_bytes(load.bytes)} (normally {format_bytes(load.normal_bytes)} in as long)"
    )
    return (
        f"{load.label} ({load.ops}): {format_share(share)} of the bytes and "
        f"{format_share(ios_share)} of the IOs {basis}, {amount}"
    )


def _in_flight_sentence(ev: Evidence, heavy: list[Load]) -> str:
    if not heavy:
        return ""
    head = "in flight while it waited" if ev.load_basis == "in flight" else "queued meanwhile"
    total_bytes = ev.victim_bytes + sum(x.bytes for x in ev.loads)
    total_ios = ev.victim_ios + sum(x.ios for x in ev.loads)
    words = [_load_words(x, total_bytes, total_ios, ev.load_basis) for x in heavy]
    return f"{head}: " + "; ".join(words)


def _rejections(
    ev: Evidence, shares: dict[str, float], heavy: list[Load], causes: list[str]
) -> list[str]:
    """Why each cause not named was not chosen, in CAUSES order."""
    total_bytes = ev.victim_bytes + sum(x.bytes for x in ev.loads)
    out = []
    by_kind = {k: [x for x in ev.loads if x.kind == k] for k in ("writeback", "journal")}
    if "writeback" not in causes:
        wb = by_kind["writeback"]
        flusher = sum(x.bytes for x in wb)
        pages = "unknown" if ev.pages_written is None else f"{ev.pages_written:,}"
        out.append(
            f"writeback ({format_share(flusher / total_bytes if total_bytes else 0.0)} of the "
            f"bytes {ev.load_basis} were flusher writes; pages written by work items: {pages})"
        )
    if "journal" not in causes:
        jn = sum(x.bytes for x in by_kind["journal"])
        out.append(
            f"journal ({format_share(jn / total_bytes if total_bytes else 0.0)} of the bytes "
            f"{ev.load_basis} were jbd2's)"
        )
    if "competing_io" not in causes:
        procs = [x for x in ev.loads if x.kind == "process"]
        top = procs[0] if procs else None
        out.append(
            "competing_io ("
            + (
                f"busiest other process {top.label}: {format_share(top.bytes / total_bytes if total_bytes else 0.0)}"
                f" of the bytes, {format_bytes(top.bytes)} against {format_bytes(top.normal_bytes)} normally"
                if top
                else f"no other process had IO {ev.load_basis}"
            )
            + ")"
        )
    if "throttling" not in causes:
        out.append(
            f"throttling ({format_share(shares['above'])} of the extra time was above the block "
            f"layer; {ev.throttle_messages} blk-throttle/iocost messages)"
        )
    few = (
        f"; {ev.stalls} separate stall{'s' * (ev.stalls != 1)}, too few to blame it on timing alone"
        if ev.stalls < MIN_STALLS_FOR_OWN_TIMING
        else ""
    )
    if "scheduler" not in causes:
        ratio = unfairness(ev)
        out.append(
            f"scheduler ({format_share(shares['queued'])} of the extra time was queued"
            + (
                f", {ratio:.1f}x what a first-come-first-served queue would have taken"
                if ratio is not None and ratio != float("inf")
                else ""
            )
            + few
            + ")"
        )
    if "device" not in causes:
        others = ev.others_at_device
        out.append(
            f"device ({format_share(shares['device'])} of the extra time was at the device"
            + (f", with {others:.1f} other IOs there on average" if others is not None else "")
            + few
            + ")"
        )
    return out
