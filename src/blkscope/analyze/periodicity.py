"""Find dominant periods in event times: bursts, then a Rayleigh (Z²) periodogram with a
multiple-testing-corrected significance, fundamental chosen over harmonics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from blkscope.units import NS_PER_S


@dataclass(frozen=True)
class Period:
    """One significant period of a series of bursts."""

    period_s: float  # seconds between cycles
    strength: float  # mean resultant length of burst phases, 0 (none) .. 1 (perfectly periodic)
    p_value: float  # chance of a peak this high in aperiodic (Poisson) bursts, all periods tried
    phase_s: float  # where in each cycle the bursts start, seconds after the series' zero
    cycles: float  # how many periods fit in the span
    bursts: int  # bursts the period was found in


def burst_spans(times_ns: np.ndarray, gap_s: float) -> tuple[np.ndarray, np.ndarray]:
    """First and last event time of each burst: runs of events closer than gap_s."""
    t = np.sort(np.asarray(times_ns, dtype=np.int64))
    if t.size == 0:
        return t, t
    breaks = np.diff(t) > int(gap_s * NS_PER_S)
    return t[np.concatenate(([True], breaks))], t[np.concatenate((breaks, [True]))]


def bursts(times_ns: np.ndarray, gap_s: float) -> np.ndarray:
    """Start times of bursts: runs of events closer than gap_s to the previous one."""
    return burst_spans(times_ns, gap_s)[0]


def _z2(t_s: np.ndarray, freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rayleigh Z² = 2 n R² and the mean phase angle for each frequency."""
    z = np.zeros(freqs.size)
    angle = np.zeros(freqs.size)
    for lo in range(0, freqs.size, 256):  # bound memory: bursts x 256 frequencies at a time
        f = freqs[lo : lo + 256]
        theta = 2 * np.pi * np.outer(f, t_s)
        c, s = np.cos(theta).sum(axis=1), np.sin(theta).sum(axis=1)
        z[lo : lo + 256] = 2 * (c * c + s * s) / t_s.size
        angle[lo : lo + 256] = np.arctan2(s, c)
    return z, angle


def _p_value(z: float, trials: float) -> float:
    single = float(np.exp(-z / 2))  # Z² with one harmonic is chi² with 2 dof under the null
    return float(-np.expm1(trials * np.log1p(-min(single, 1 - 1e-16))))


# Frequencies one search tries at most: ten per independent frequency up to a span of about
# 10,000 s at the shortest period of 1 s; past it the grid is coarser (the peak is refined
# after), so the search never grows with the range of a corrupt timestamp (136 years: 4e10).
MAX_FREQUENCIES = 100_000


def _grid(span_s: float, shortest: float, longest: float) -> np.ndarray:
    """Frequencies tried between 1/longest and 1/shortest: ten per independent frequency, at
    most MAX_FREQUENCIES."""
    step = max(1 / (10 * span_s), (1 / shortest - 1 / longest) / MAX_FREQUENCIES)
    return np.arange(1 / longest, 1 / shortest, step)


def _blind_band(span_s: float, min_period_s: float, max_period_s: float | None) -> float:
    """The longest period the blind search tries: a third of the span (three cycles)."""
    return span_s / 3 if max_period_s is None else min(max_period_s, span_s / 3)


def spectrum(
    times_ns: np.ndarray,
    span_ns: tuple[int, int],
    *,
    min_period_s: float = 1.0,
    max_period_s: float | None = None,
    burst_gap_s: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """(period_s, Z²) over the blind search's grid, longest period first: the periodogram
    find_periods scans (empty under 3 bursts or 3 cycles of min_period_s)."""
    span_s = (span_ns[1] - span_ns[0]) / NS_PER_S
    starts = bursts(times_ns, burst_gap_s)
    longest = _blind_band(span_s, min_period_s, max_period_s)
    if starts.size < 3 or longest <= min_period_s:
        return np.zeros(0), np.zeros(0)
    freqs = _grid(span_s, min_period_s, longest)
    z, _ = _z2((starts - span_ns[0]) / NS_PER_S, freqs)
    return 1 / freqs, z


def find_periods(
    times_ns: np.ndarray,
    span_ns: tuple[int, int],
    *,
    knobs: dict[str, float] | None = None,
    min_period_s: float = 1.0,
    max_period_s: float | None = None,
    burst_gap_s: float = 0.5,
    alpha: float = 0.01,
    max_periods: int = 3,
) -> list[Period]:
    """Return the significant periods of the bursts in times_ns, most significant first.

    Two searches: a blind one over [min_period_s, span/3], and, for each kernel knob's
    interval (writeback, expiry, jbd2 commit), a narrow one at +-10% of it. The narrow band
    tries few frequencies, so it can confirm an expected period from fewer bursts.
    """
    t0, t1 = span_ns
    span_s = (t1 - t0) / NS_PER_S
    starts = bursts(times_ns, burst_gap_s)
    longest = _blind_band(span_s, min_period_s, max_period_s)
    if starts.size < 3 or longest <= min_period_s:
        return []
    t_s = (starts - t0) / NS_PER_S
    found = _search(t_s, span_s, min_period_s, longest, alpha, max_periods)
    for value in sorted(set((KNOBS if knobs is None else knobs).values())):
        lo, hi = value / 1.1, min(value * 1.1, longest)
        if hi <= lo or any(abs(p.period_s - value) <= 0.1 * value for p in found):
            continue
        found += _search(t_s, span_s, lo, hi, alpha, 1)
    return sorted(_drop_harmonics(found), key=lambda p: p.p_value)[:max_periods]


def _drop_harmonics(periods: list[Period]) -> list[Period]:
    """Bursts every P also line up every P/2, P/3...: keep P when it is nearly as strong."""

    def is_harmonic(short: Period, long: Period) -> bool:
        k = round(long.period_s / short.period_s)
        close = abs(long.period_s - k * short.period_s) <= 0.05 * long.period_s
        return k >= 2 and close and long.strength >= 0.7 * short.strength

    return [p for p in periods if not any(is_harmonic(p, q) for q in periods if q is not p)]


def _search(
    t_s: np.ndarray, span_s: float, shortest: float, longest: float, alpha: float, limit: int
) -> list[Period]:
    f_lo, f_hi = 1 / longest, 1 / shortest
    freqs = _grid(span_s, shortest, longest)
    if freqs.size < 3:
        return []
    z, _ = _z2(t_s, freqs)
    trials = max(1.0, (f_hi - f_lo) * span_s)  # independent frequencies in the scanned band
    width = 1 / span_s
    found: list[Period] = []
    available = np.ones(freqs.size, dtype=bool)
    while len(found) < limit and available.any():
        k = int(np.argmax(np.where(available, z, -1)))
        if _p_value(z[k], trials) > alpha:
            break
        k = _fundamental(freqs, z, available, k)
        f = _refine(freqs, z, k)
        strength = float(np.sqrt(z[k] / (2 * t_s.size)))
        f, phase = _longest_alignment(t_s, span_s, f, strength)
        found.append(
            Period(
                period_s=1 / f,
                strength=strength,
                p_value=_p_value(z[k], trials),
                phase_s=phase / f,
                cycles=span_s * f,
                bursts=int(t_s.size),
            )
        )
        for h in range(1, int(f_hi / f) + 2):  # drop this period and its harmonics
            available &= np.abs(freqs - h * f) > width
    return found


def _longest_alignment(
    t_s: np.ndarray, span_s: float, f: float, strength: float
) -> tuple[float, float]:
    """Bursts every 2P also line up every P (each P-cycle holds a burst or nothing): when they
    line up as well at a multiple kP that still fits twice in the span, the period is kP."""
    best = f
    for k in (2, 3, 4):
        if k / f > span_s / 2:
            break
        z, _ = _z2(t_s, np.array([f / k]))
        if np.sqrt(z[0] / (2 * t_s.size)) >= 0.9 * strength:
            best = f / k
    best = _typical_interval(t_s, best)
    _, angle = _z2(t_s, np.array([best]))
    return best, float((angle[0] / (2 * np.pi)) % 1.0)


def _typical_interval(t_s: np.ndarray, f: float) -> float:
    """The median gap between bursts, per cycle: a flusher re-arms its timer after long work,
    so a few stretched cycles must not pull the period off the usual one (5.12 s, not 5.22)."""
    gaps = np.diff(np.sort(t_s))
    cycles = np.round(gaps * f)
    per_cycle = gaps[cycles >= 1] / cycles[cycles >= 1]
    if per_cycle.size < 2:
        return f
    typical = float(np.median(per_cycle))
    return 1 / typical if abs(typical * f - 1) < 0.1 else f


def _fundamental(freqs: np.ndarray, z: np.ndarray, available: np.ndarray, k: int) -> int:
    """A pulse train scores as high at 2f, 3f... as at f: prefer the lowest strong divisor."""
    best = k
    for div in range(2, 9):
        target = freqs[k] / div
        if target < freqs[0]:
            break
        j = int(np.argmin(np.abs(freqs - target)))
        lo, hi = max(0, j - 3), min(freqs.size, j + 4)
        j = lo + int(np.argmax(z[lo:hi]))
        if available[j] and z[j] >= 0.8 * z[k]:
            best = j
    return best


def _refine(freqs: np.ndarray, z: np.ndarray, k: int) -> float:
    """Parabolic interpolation of the peak around bin k."""
    if 0 < k < freqs.size - 1:
        a, b, c = z[k - 1], z[k], z[k + 1]
        denom = a - 2 * b + c
        if denom < 0:
            return float(freqs[k] + 0.5 * (a - c) / denom * (freqs[1] - freqs[0]))
    return float(freqs[k])


KNOBS = {
    "vm.dirty_writeback_centisecs": 5.0,
    "vm.dirty_expire_centisecs": 30.0,
    "jbd2 commit interval": 5.0,
}


def matching_knobs(period_s: float, knobs: dict[str, float] | None = None) -> list[str]:
    """Kernel settings whose interval (seconds) the period matches within 0.2 s or 5%."""
    table = KNOBS if knobs is None else knobs
    return [
        name for name, value in table.items() if abs(period_s - value) <= max(0.2, 0.05 * value)
    ]
