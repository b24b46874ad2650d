"""The data of a device's interactive time charts (latency, heat map, throughput, depth, LBA),
as one JSON document the page's script draws: every value the model read from the tables, in
integer ns where it is a time, nothing recomputed. Axis decisions that need a sentence on the
page (a log axis, and why) are made here, so that the sentence is in the HTML."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from blkscope.concepts import OBSERVER_COMMS, OP_CLASSES
from blkscope.reports.chart_series import Band, HeatCells
from blkscope.reports.legends import OBSERVER_COLOUR, user_colour
from blkscope.reports.model import Device
from blkscope.reports.plotting import OP_COLOURS, number
from blkscope.units import format_ns
from blkscope.wallclock import WallClock

# The charts the script draws, in page order, and their titles.
TIME_CHARTS = {
    "latency": "Latency over time",
    "heatmap": "Latency heat map",
    "throughput": "IOPS and throughput per op class",
    "depth": "In-flight depth",
    "lba": "Where on the device (LBA over time)",
}


def _ints(a: np.ndarray) -> list[int | None]:
    """Integers, None where NaN (no value in that bin)."""
    return [None if math.isnan(v) else int(v) for v in np.asarray(a, dtype=np.float64)]


def _floats(a: np.ndarray, digits: int = 4) -> list[float | None]:
    """Values rounded to a few significant digits (the chart is no finer than that); None for
    NaN, which JSON cannot carry."""
    return [
        None if math.isnan(v) else float(f"{v:.{digits}g}") for v in np.asarray(a, dtype=np.float64)
    ]


class Strings:
    """A table of the untrusted strings (process names) the document refers to by index."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: str | None) -> int | None:
        if text is None:
            return None
        if text not in self._index:
            self._index[text] = len(self.items)
            self.items.append(text)
        return self._index[text]


def log_axis_note(values: np.ndarray, what: str, unit: str, at_s: np.ndarray) -> str | None:
    """When one burst towers over the usual level (the top bin over 20x the 95th percentile of
    the bins with data), the panel gets a log axis, and this sentence says why."""
    v = np.asarray(values, dtype=np.float64)
    positive = v[np.isfinite(v) & (v > 0)]
    if positive.size < 20:
        return None
    top, usual = float(positive.max()), float(np.quantile(positive, 0.95))
    if not (usual > 0 and top > 20 * usual):
        return None
    worst = int(np.nanargmax(v))
    return (
        f"{what}: log axis, because one burst reaches {number(top)} {unit} (at "
        f"{at_s[worst]:.2f} s) against a usual {number(usual)} {unit} (95th percentile)."
    )


def _band(band: Band, strings: Strings) -> dict[str, Any]:
    return {
        "p50": _ints(band.p50),
        "p99": _ints(band.p99),
        "max": _ints(band.max),
        "n": [int(n) for n in band.n],
        "slowest": [strings.ref(c) for c in band.slowest],
    }


def _heat(cells: HeatCells, strings: Strings) -> dict[str, Any]:
    return {
        "bin": cells.bin.tolist(),
        "lo": cells.lo_ns.tolist(),
        "hi": cells.hi_ns.tolist(),
        "n": cells.n.tolist(),
        "observer": cells.observer_n.tolist(),
        "max": cells.max_ns.tolist(),
        "slowest": [strings.ref(c) for c in cells.slowest],
    }


def _rates(dev: Device, centers_s: np.ndarray) -> tuple[dict[str, Any], list[str]]:
    ops = [op for op in OP_CLASSES if op in dev.rates or op in dev.observer_rates]
    zero = np.zeros(dev.bins.count)
    out: dict[str, Any] = {}
    notes: list[str] = []
    for op in ops:
        iops, mib = dev.rates.get(op, (zero, zero))
        obs_iops, obs_mib = dev.observer_rates.get(op, (zero, zero))
        panel: dict[str, Any] = {}
        for key, values, observed, unit in (
            ("iops", iops, obs_iops, "IOs/s"),
            ("mib", mib, obs_mib, "MiB/s"),
        ):
            if op == "flush" and key == "mib":
                continue  # flushes carry no data
            note = log_axis_note(values, f"{op} {unit}", unit, centers_s)
            notes += [note] if note else []
            panel[key] = {
                "values": _floats(values),
                "observer": _floats(observed) if np.any(observed) else None,
                "log": note is not None,
            }
        out[op] = panel
    return out, notes


def _observer_bins(dev: Device) -> np.ndarray:
    """The bins in which the capture's own tools completed IO."""
    busy = np.zeros(dev.bins.count, dtype=bool)
    for iops, _ in dev.observer_rates.values():
        busy |= np.asarray(iops) > 0
    return np.flatnonzero(busy)


def _episodes(dev: Device) -> list[dict[str, Any]]:
    """The episodes table's rows, generically: when, the cause and its sentence, the worst."""
    return [
        {
            "id": e.get("episode_id"),
            "start": e["start_ns"],
            "end": e["end_ns"],
            "cause": e.get("cause"),
            "reason": e.get("reason"),
            "worst": e.get("worst_metric"),
            "peak": e.get("peak_ns"),
            "peak_latency": e.get("peak_latency_ns"),
        }
        for e in dev.episodes
    ]


def device_timeline(dev: Device, n: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(the device's chart document, the notes each chart shows under it)."""
    strings = Strings()
    centers_s = dev.bins.centers_s()
    rates, rate_notes = _rates(dev, centers_s)
    driver = dev.depth.get("driver")
    observed = _observer_bins(dev)
    depth_notes: list[str] = []
    if driver is not None:
        # the observer's bursts set no axis: judged on the bins where it completed no IO
        mine = driver.max.copy()
        mine[observed] = np.nan
        note = log_axis_note(mine, "depth", "requests", centers_s)
        depth_notes += [note] if note else []
        if observed.size and np.nanmax(driver.max[observed]) > np.nanmax(mine, initial=0):
            worst = observed[int(np.argmax(driver.max[observed]))]
            depth_notes.append(
                f"depth: {number(driver.max[worst])} requests at {centers_s[worst]:.2f} s, with "
                "the capture's own tools' IO in flight, runs off the top: the observer does not "
                "set the axis."
            )
    lba = dev.lba
    doc: dict[str, Any] = {
        "id": f"d{n}",
        "name": dev.name_text,
        "bins": {"start": dev.bins.start_ns, "width": dev.bins.width_ns, "count": dev.bins.count},
        "latency": {"D2C": _band(dev.d2c, strings), "Q2C": _band(dev.q2c, strings)},
        "heatmap": {stage: _heat(cells, strings) for stage, cells in dev.heatmap.items()},
        "user": [
            {
                "name": s.name,
                "unit": s.unit,
                "colour": user_colour(k),
                "t": s.t_ns.tolist(),
                "ns": [round(v) for v in s.value_ns],
            }
            for k, s in enumerate(dev.user)
        ],
        "spikes": [
            {
                "id": s["spike_id"],
                "metric": s["metric"],
                "start": s["start_ns"],
                "end": s["end_ns"],
                "peak": s["peak_ns"],
                "peak_latency": s["peak_latency_ns"],
                "episode": s["episode_id"],
            }
            for s in dev.spikes
        ],
        "episodes": _episodes(dev),
        "writeback": [
            {
                "start": w["start_ns"],
                "end": w["end_ns"],
                "pages": w.get("pages"),
                "reason": w.get("reason"),
            }
            for w in dev.writeback
        ],
        "bursts": {
            s: dev.spectra[s].burst_starts_ns.tolist()
            for s in ("kworker_writes", "jbd2_writes")
            if s in dev.spectra and dev.spectra[s].burst_starts_ns.size
        },
        "rates": rates,
        "depth": None
        if driver is None
        else {
            "max": _floats(driver.max),
            "mean": _floats(driver.mean),
            "log": any("log axis" in n for n in depth_notes),
            "observer_bins": observed.tolist(),
        },
        "lba": {
            "bucket_sectors": lba.bucket_sectors,
            "lo_sector": lba.lo_sector,
            "bin": lba.bin.tolist(),
            "bucket": lba.bucket.tolist(),
            "op": [OP_CLASSES.index(op) for op in lba.op_class.tolist()],
            "n": lba.n.tolist(),
        },
        "ops": list(OP_CLASSES),
        "op_colours": OP_COLOURS,
        "observer_colour": OBSERVER_COLOUR,
        "strings": strings.items,
    }
    notes = {
        "latency": _user_notes(dev),
        "heatmap": [],
        "throughput": rate_notes,
        "depth": depth_notes,
        "lba": [
            f"Each mark is one cell of {format_ns(dev.bins.width_ns, sep=' ')} x "
            f"{size_label(lba.bucket_sectors)} of the device holding at least one bio (at Q)."
        ],
    }
    if dev.d2c.empty and dev.q2c.empty:
        notes["latency"].insert(0, "no completions: no latency to draw")
        notes["heatmap"].insert(0, "no completions: no latency to draw")
    if not dev.rates and not dev.observer_rates:
        notes["throughput"].insert(0, "no completions: no rate to draw")
    if driver is None:
        notes["depth"].insert(0, "no dispatches: no depth to draw")
    if dev.observer_rates:
        notes["throughput"].append(
            "Grey: IO of the capture's own tools ("
            + ", ".join(OBSERVER_COMMS)
            + "), drawn apart and never setting an axis."
        )
    return doc, notes


def _user_notes(dev: Device) -> list[str]:
    out = []
    for s in dev.user:
        if s.unplaced:
            out.append(
                f"{s.name}: {s.unplaced} samples have no time on the trace clock and are not drawn."
            )
    return out


def size_label(sectors: int) -> str:
    """A size in sectors as 512 MiB, 4 KiB, 1 GiB."""
    size = sectors * 512
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} B"


def clock_doc(clock: WallClock) -> dict[str, Any]:
    """What the script needs to print wall-clock times: trace zero as seconds into its UTC day
    (exact to the us in a double), and the host zone's offset and name when known."""
    if clock.zero_ns is None:
        return {"known": False}
    offset = clock.host_zone.utcoffset(None) if clock.host_zone is not None else None
    seconds = offset.total_seconds() if offset is not None else 0
    return {
        "known": True,
        "zero_day_s": (clock.zero_ns % (86_400 * 10**9)) / 1e9,
        "zone_offset_s": int(seconds),
        "zone": clock.zone_label() if seconds else None,
    }
