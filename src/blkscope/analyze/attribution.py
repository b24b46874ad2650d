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
# ... at this many times its own normal level, in bytes and in IOs ...
LOAD_ABOVE_NORMAL = 2.0
# ... and had at least this many IOs in flight on average (one stray IO is not a load).
LOAD_MIN_IOS = 0.5
# A stage dominates when it holds this share of the victim's extra time.
STAGE_SHARE = 0.5
# The device was idle while the victim queued / alone with the victim's IO below this share.
IDLE_SHARE = 0.5
CAUSE_OF_LOAD = {"writeback": "writeback", "journal": "journal", "process": "competing_io"}


@dataclass(frozen=True)
class Verdict:
    """The cause (CAUSES names joined by '+', strongest first) and the sentence behind it."""

    cause: str
    reason: str


def heavy_loads(ev: Evidence) -> list[Load]:
    """The loads that explain the victim's wait (see the module doc), strongest first."""
    total_bytes = ev.victim_bytes + sum(x.bytes for x in ev.loads)
    total_ios = ev.victim_ios + sum(x.ios for x in ev.loads)
    heavy = []
    for load in ev.loads:
        share_bytes = load.bytes / total_bytes if total_bytes else 0.0
        share_ios = load.ios / total_ios if total_ios else 0.0
        big = share_bytes >= LOAD_BYTES_SHARE or share_ios >= LOAD_IOS_SHARE
        raised = (
            load.bytes >= LOAD_ABOVE_NORMAL * load.normal_bytes
            and load.ios >= LOAD_ABOVE_NORMAL * load.normal_ios
        )
        if big and raised and load.ios >= LOAD_MIN_IOS:
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
        causes += _loads_above(ev, heavy)
    elif dominant and stage == "after":
        causes += [CAUSE_OF_LOAD[x.kind] for x in heavy if x.kind != "process"]
    else:  # queued, at the device, or spread over stages: what loaded the device
        causes += [CAUSE_OF_LOAD[x.kind] for x in heavy]
        if not causes and dominant and stage == "queued" and _below(ev.busy_while_queued):
            causes.append("scheduler")
        if not causes and dominant and stage == "device" and _alone(ev):
            causes.append("device")
    causes = list(dict.fromkeys(causes)) or ["unexplained"]
    return Verdict("+".join(causes), _reason(ev, shares, heavy, causes))


def _loads_above(ev: Evidence, heavy: list[Load]) -> list[str]:
    """Causes of time above the block layer: a writer held back while writeback wrote pages
    (dirty throttling, pages under writeback), or a journal commit it had to wait for."""
    causes = [CAUSE_OF_LOAD[x.kind] for x in heavy if x.kind != "process"]
    if "writeback" not in causes and ev.pages_written:
        causes.append("writeback")
    return causes


def _below(share: float | None) -> bool:
    return share is not None and share < IDLE_SHARE


def _alone(ev: Evidence) -> bool:
    """The victim's IO had the device to itself: measured directly for a known process, and for
    block-level victims, no other load was heavy (heavy loads are handled before)."""
    return ev.shared_while_at_device is None or ev.shared_while_at_device < IDLE_SHARE


def _reason(ev: Evidence, shares: dict[str, float], heavy: list[Load], causes: list[str]) -> str:
    parts = [_victim_sentence(ev, shares)]
    parts.append(_in_flight_sentence(ev, heavy))
    parts.append("rejected: " + "; ".join(_rejections(ev, shares, heavy, causes)))
    return ". ".join(p for p in parts if p)


def _victim_sentence(ev: Evidence, shares: dict[str, float]) -> str:
    head = f"{ev.victim}: worst {format_ns(ev.worst_ns, ' ')}"
    if not ev.decomposed:
        return head + " (its own IO could not be found in the trace, so its time is not split)"
    spent = [
        f"{format_share(shares[s])} {STAGE_WORDS[s]} ({format_ns(ev.stage_ns[s] / ev.items, ' ')}"
        f" a slow IO, normally {format_ns(ev.normal_ns[s], ' ')})"
        for s in STAGES
        if shares[s] > 0
    ]
    return head + "; its extra time went " + ", ".join(spent) if spent else head


def _load_words(load: Load, total_bytes: float, total_ios: float) -> str:
    share = load.bytes / total_bytes if total_bytes else 0.0
    ios_share = load.ios / total_ios if total_ios else 0.0
    return (
        f"{load.label} ({load.ops}): {format_share(share)} of the bytes and "
        f"{format_share(ios_share)} of the IOs in flight, {format_bytes(load.bytes)} on average "
        f"(normally {format_bytes(load.normal_bytes)})"
    )


def _in_flight_sentence(ev: Evidence, heavy: list[Load]) -> str:
    if not heavy:
        return ""
    total_bytes = ev.victim_bytes + sum(x.bytes for x in ev.loads)
    total_ios = ev.victim_ios + sum(x.ios for x in ev.loads)
    words = [_load_words(x, total_bytes, total_ios) for x in heavy]
    return "in flight while it waited: " + "; ".join(words)


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
            f"bytes in flight were flusher writes; pages written by work items: {pages})"
        )
    if "journal" not in causes:
        jn = sum(x.bytes for x in by_kind["journal"])
        out.append(
            f"journal ({format_share(jn / total_bytes if total_bytes else 0.0)} of the bytes "
            "in flight were jbd2's)"
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
                else "no other process had IO in flight"
            )
            + ")"
        )
    if "throttling" not in causes:
        out.append(
            f"throttling ({format_share(shares['above'])} of the extra time was above the block "
            f"layer; {ev.throttle_messages} blk-throttle/iocost messages)"
        )
    if "scheduler" not in causes:
        busy = ev.busy_while_queued
        out.append(
            f"scheduler ({format_share(shares['queued'])} of the extra time was queued"
            + (f"; the device was busy {format_share(busy)} of that time" if busy is not None else "")
            + ")"
        )
    if "device" not in causes:
        shared = ev.shared_while_at_device
        out.append(
            f"device ({format_share(shares['device'])} of the extra time was at the device"
            + (f"; other IO shared it {format_share(shared)} of that time" if shared is not None else "")
            + ")"
        )
    return out
