//! The in-flight step functions of the `depth` and `depth_bins` tables, walked beside the
//! pass: per device and level (driver: requests between D and C; queue: bios between Q and
//! completion), steps in time order, each moment's steps applied -1 before 0 before +1, so a
//! depth passed through within one nanosecond is still listed, held 0 ns
//! (sql/_depth_build.sql says what counts).
//!
//! The walk keeps per key only the moment it is at (its counts of -1, 0 and +1 steps) and
//! sums: time held per depth, and per time bin the highest depth held, the sum of depth x ns
//! and the traced ns. Memory follows the depth range and the bins, not the trace.
//!
//! One thing is not known while walking: whether a C whose request had no D ends a request
//! that was in flight since the trace start (+1 from t0 until that C) or is an orphan (left
//! out), which is settled after the pass (`settle`). Such a C (a boundary) is left out of the
//! walk and starts a new segment of the key's sums; after the verdict each segment is
//! shifted by the number of counted boundaries after it (a sum of depth x ns shifts exactly,
//! by that count x ns), and the moments where the shift changes are replayed from their
//! counts. A bio's completion reaches the walk when its row is written, at its C's time,
//! except at the trace end, where a bio still waiting for the end of its flush sequence is
//! written with its own C's (earlier) time: steps at or after the earliest such time wait
//! (the horizon) until the pass knows.

use super::rows::{RequestKind, RequestRow};

/// What a step does to its key's depth.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Delta {
    Minus,
    Plus,
    /// A C whose request had no D: -1 if its request is counted from the trace start, nothing
    /// if it is an orphan (`settle`).
    Boundary,
    /// A D-less C without a length: no step, but its request, unless an orphan, is in flight
    /// for the whole trace.
    NoLength,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Step {
    pub t: i64,
    pub key: usize,
    pub delta: Delta,
    pub eid: i64,
}

/// The levels of a device, in the order of their keys (key = 2 x device index + level).
pub const LEVELS: [&str; 2] = ["driver", "queue"];

pub fn driver_key(dev: usize) -> usize {
    2 * dev
}

pub fn queue_key(dev: usize) -> usize {
    2 * dev + 1
}

/// Where a device's time bins lie (sql/time_bins.sql) and its first and last event.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bounds {
    pub t0: i64,
    pub t1: i64,
    pub start: i64,
    pub width: i64,
    pub bins: i64,
}

#[derive(Clone, Copy, Debug, Default)]
struct BinSums {
    max_depth: Option<i64>,
    depth_ns: i64,
    ns: i64,
}

/// One key's walk: its open moment, its depth before it, and the current segment's sums.
#[derive(Clone, Debug)]
struct Level {
    /// The open moment's time, and its counts of -1, 0 and +1 steps and of boundaries.
    t: i64,
    minus: i64,
    zeros: i64,
    plus: i64,
    boundaries: i64,
    /// The depth before the open moment.
    depth: i64,
    segment: i64,
    /// The depths this segment visited (lo > hi: none).
    visited: (i64, i64),
    /// The open moment is the trace start's.
    first: bool,
    /// Its device has events (bounds): it is walked and listed.
    present: bool,
    ended: bool,
    bounds: Bounds,
    /// ns held per depth: held[i] is depth held_lo + i.
    held: Vec<i64>,
    held_lo: i64,
    bins: Vec<BinSums>,
    /// The bin the last hold ended in: (its start, its slot), None before the first hold or
    /// past the last bin. A hold inside it (nearly all: steps are far closer than a bin is
    /// wide) needs no division.
    bin_at: Option<(i64, usize)>,
}

/// What a finished segment or a special moment leaves for `settle`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Moment {
    pub key: usize,
    pub segment: i64,
    pub t: i64,
    pub depth: i64,
    pub minus: i64,
    pub zeros: i64,
    pub plus: i64,
    pub first: bool,
}

#[derive(Default)]
struct Outputs {
    /// (key, segment, depth, ns)
    held: Vec<(usize, i64, i64, i64)>,
    /// (key, segment, bin, max depth, depth x ns, ns)
    bins: Vec<(usize, i64, i64, i64, i64, i64)>,
    /// (key, segment, lowest, highest depth visited)
    visits: Vec<(usize, i64, i64, i64)>,
    moments: Vec<Moment>,
    /// (key, time, C's event id, a boundary (else a C without a length))
    marks: Vec<(usize, i64, i64, bool)>,
}

const BIG: i64 = i64::MAX;

/// The depths a moment visits from depth d with m -1s, z 0s and p +1s, in that order:
/// d-1 .. d-m, then d-m (a 0), then d-m+1 .. d-m+p (lo > hi: none).
pub fn visit_range(d: i64, m: i64, z: i64, p: i64) -> (i64, i64) {
    let lo = if m > 0 || z > 0 { d - m } else { d + 1 };
    let mut hi = -BIG;
    if m > 0 {
        hi = d - 1;
    }
    if z > 0 {
        hi = hi.max(d - m);
    }
    if p > 0 {
        hi = hi.max(d - m + p);
    }
    (lo, hi)
}

impl Level {
    fn new(bounds: Option<Bounds>, bin_slots: usize) -> Level {
        Level {
            t: bounds.map_or(0, |b| b.t0),
            minus: 0,
            zeros: 1, // the 0 step at the trace start
            plus: 0,
            boundaries: 0,
            depth: 0,
            segment: 0,
            visited: (BIG, -BIG),
            first: true,
            present: bounds.is_some(),
            ended: bounds.is_none(),
            bounds: bounds.unwrap_or(Bounds {
                width: 1,
                ..Bounds::default()
            }),
            held: Vec::new(),
            held_lo: 0,
            bins: vec![BinSums::default(); bin_slots],
            bin_at: None,
        }
    }

    /// Apply the open moment's steps and hold the depth they leave until t_next, where the
    /// next moment opens.
    #[inline(always)]
    fn close(&mut self, t_next: i64) {
        let d = self.depth - self.minus + self.plus;
        if t_next > self.t {
            self.hold(d, self.t, t_next);
        }
        self.depth = d;
        self.minus = 0;
        self.zeros = 0;
        self.plus = 0;
        self.boundaries = 0;
        self.first = false;
        self.t = t_next;
    }

    fn held_at(&mut self, depth: i64) -> &mut i64 {
        if self.held.is_empty() {
            self.held_lo = depth;
            self.held.push(0);
        } else if depth < self.held_lo {
            let more = (self.held_lo - depth) as usize;
            self.held.splice(0..0, std::iter::repeat_n(0, more));
            self.held_lo = depth;
        } else if depth >= self.held_lo + self.held.len() as i64 {
            self.held.resize((depth - self.held_lo + 1) as usize, 0);
        }
        &mut self.held[(depth - self.held_lo) as usize]
    }

    /// Depth held over [a, b): into the depth sums and each time bin it touches (the last bin
    /// ends at the trace end: _depth_bins_build.sql). A bin number below 0 (a step before the
    /// first bin's start: sql/time_bins.sql aligns a negative t0 upwards) counts from the end
    /// of the bin slots, as the compiled walk before this one indexed it.
    fn hold(&mut self, depth: i64, a: i64, b: i64) {
        *self.held_at(depth) += b - a;
        let width = self.bounds.width;
        if let Some((lo, slot)) = self.bin_at {
            if lo <= a && b <= lo + width {
                self.bins[slot].add(depth, b - a);
                return;
            }
        }
        let Bounds { start, bins: n, .. } = self.bounds;
        let last = (b - 1 - start).div_euclid(width).min(n - 1);
        let slots = self.bins.len() as i64;
        for x in (a - start).div_euclid(width)..=last {
            let ns = b.min(start + (x + 1) * width) - a.max(start + x * width);
            self.bins[x.rem_euclid(slots) as usize].add(depth, ns);
        }
        // the bin holding b - 1, where the next hold most likely falls, if it is a bin
        let x = (b - 1 - start).div_euclid(width);
        self.bin_at = (x < n).then(|| (start + x * width, x.rem_euclid(slots) as usize));
    }
}

impl BinSums {
    /// Depth held for ns inside the bin.
    #[inline]
    fn add(&mut self, depth: i64, ns: i64) {
        if self.max_depth.is_none_or(|m| depth > m) {
            self.max_depth = Some(depth);
        }
        self.depth_ns += depth * ns;
        self.ns += ns;
    }
}

/// The walk over every device's two levels.
pub struct DepthWalk {
    levels: Vec<Level>,
    /// Steps waiting to be walked (at or after the horizon), in time order per key.
    pending: Vec<Step>,
    /// This batch's event steps, in event order.
    batch: Vec<Step>,
    /// Bio completions written during this batch: (time, key).
    completions: Vec<(i64, usize)>,
    /// Requests in flight for the whole trace (no D, no C), per key.
    whole: Vec<i64>,
    out: Outputs,
}

/// The walk's sums once the boundaries are settled: (key, depth, ns held) and (key, bin, max
/// depth, depth x ns, ns).
pub type Settled = (Vec<(usize, i64, i64)>, Vec<(usize, i64, i64, i64, i64)>);

impl DepthWalk {
    /// A walk over these devices (by index; None: a device with no events).
    pub fn new(bounds: &[Option<Bounds>]) -> DepthWalk {
        let slots = bounds
            .iter()
            .flatten()
            .map(|b| b.bins.max(1) as usize)
            .max()
            .unwrap_or(1);
        let levels = bounds
            .iter()
            .flat_map(|&b| [Level::new(b, slots), Level::new(b, slots)])
            .collect();
        DepthWalk {
            levels,
            pending: Vec::new(),
            batch: Vec::new(),
            completions: Vec::new(),
            whole: vec![0; 2 * bounds.len()],
            out: Outputs::default(),
        }
    }

    /// A step of an event of the current batch.
    pub fn step(&mut self, t: i64, key: usize, delta: Delta, eid: i64) {
        self.batch.push(Step { t, key, delta, eid });
    }

    /// A bio's row was written with completion time c: the queue level's -1. Nearly always c
    /// is the current event's time, at or after every step of the batch so far, and the step
    /// joins them in order; an earlier one (a bio that waited for its flush end) is merged in
    /// by `collect`.
    pub fn bio_completed(&mut self, c: i64, dev: usize) {
        if self.completions.is_empty() && self.batch.last().is_none_or(|s| s.t <= c) {
            self.batch.push(Step {
                t: c,
                key: queue_key(dev),
                delta: Delta::Minus,
                eid: 0,
            });
        } else {
            self.completions.push((c, queue_key(dev)));
        }
    }

    /// A request's row was written: without D and C, it is in flight for the whole trace.
    pub fn request_written(&mut self, row: &RequestRow) {
        if row.life.first_d.is_none()
            && row.life.c_t.is_none()
            && matches!(row.kind, RequestKind::Data | RequestKind::Flush)
        {
            self.whole[driver_key(row.dev)] += 1;
        }
    }

    /// Queue the batch's steps, merged in time order with the completions written meanwhile.
    fn collect(&mut self) {
        if self.completions.is_empty() {
            if self.pending.is_empty() {
                std::mem::swap(&mut self.pending, &mut self.batch);
            } else {
                self.pending.append(&mut self.batch);
            }
            return;
        }
        self.completions.sort_by_key(|&(t, _)| t); // stable: equal times keep their order
        let mut done = self.completions.drain(..).peekable();
        for step in self.batch.drain(..) {
            while let Some(&(t, key)) = done.peek() {
                if t > step.t {
                    break;
                }
                self.pending.push(Step {
                    t,
                    key,
                    delta: Delta::Minus,
                    eid: 0,
                });
                done.next();
            }
            self.pending.push(step);
        }
        for (t, key) in done {
            self.pending.push(Step {
                t,
                key,
                delta: Delta::Minus,
                eid: 0,
            });
        }
    }

    /// The batch is over: queue its steps and walk those before `horizon` (the earliest time a
    /// bio still waiting could be written with).
    pub fn end_batch(&mut self, horizon: i64) -> Result<(), String> {
        self.collect();
        self.walk(horizon)
    }

    /// The pass is over (every bio written): walk everything to each device's last event.
    pub fn end(&mut self) -> Result<(), String> {
        self.collect();
        self.pending.sort_by_key(|s| s.t); // a waiting bio's late C (stable)
        self.walk(BIG)?;
        for k in 0..self.levels.len() {
            if !self.levels[k].ended {
                let t_next = self.levels[k].bounds.t1.max(self.levels[k].t);
                self.close_moment(k, t_next);
                self.snapshot(k);
                self.levels[k].ended = true;
            }
        }
        Ok(())
    }

    /// Walk the pending steps before `until`; keep the rest (from the first at or after it).
    fn walk(&mut self, until: i64) -> Result<(), String> {
        let mut walked = 0;
        while walked < self.pending.len() {
            let step = self.pending[walked];
            if step.t >= until {
                break;
            }
            let k = step.key;
            if step.t > self.levels[k].t {
                self.close_moment(k, step.t);
            } else if step.t < self.levels[k].t {
                return Err(format!(
                    "depth walk: a step at {} came before its device's moment at {} (a bug)",
                    step.t, self.levels[k].t
                ));
            }
            let level = &mut self.levels[k];
            match step.delta {
                Delta::Minus => level.minus += 1,
                Delta::Plus => level.plus += 1,
                Delta::Boundary | Delta::NoLength => {
                    let boundary = step.delta == Delta::Boundary;
                    if boundary {
                        level.boundaries += 1;
                    }
                    self.out.marks.push((k, step.t, step.eid, boundary));
                }
            }
            walked += 1;
        }
        self.pending.drain(..walked);
        Ok(())
    }

    /// Apply key k's open moment and hold its last depth until t_next. A moment with a
    /// boundary (or the trace start's) is kept whole for `settle` and starts a new segment;
    /// any other (nearly all) only widens the depths its segment visited, here, in the walk's
    /// own loop.
    #[inline(always)]
    fn close_moment(&mut self, k: usize, t_next: i64) {
        let level = &mut self.levels[k];
        if level.first || level.boundaries > 0 {
            self.close_special_moment(k, t_next);
            return;
        }
        let (lo, hi) = visit_range(level.depth, level.minus, level.zeros, level.plus);
        level.visited = (level.visited.0.min(lo), level.visited.1.max(hi));
        level.close(t_next);
    }

    /// `close_moment` of the trace start's moment or one with a boundary: the boundaries'
    /// shift changes here, so the segment's sums are written out and the moment kept whole.
    #[inline(never)]
    fn close_special_moment(&mut self, k: usize, t_next: i64) {
        let level = &self.levels[k];
        if !level.first {
            self.snapshot(k);
            self.levels[k].segment += 1;
        }
        let level = &self.levels[k];
        self.out.moments.push(Moment {
            key: k,
            segment: level.segment,
            t: level.t,
            depth: level.depth,
            minus: level.minus,
            zeros: level.zeros,
            plus: level.plus,
            first: level.first,
        });
        self.levels[k].close(t_next);
    }

    /// Write key k's segment sums out and start the next segment from zero.
    fn snapshot(&mut self, k: usize) {
        let level = &mut self.levels[k];
        let seg = level.segment;
        for (i, ns) in level.held.iter_mut().enumerate() {
            if *ns != 0 {
                self.out.held.push((k, seg, level.held_lo + i as i64, *ns));
                *ns = 0;
            }
        }
        for (b, sums) in level.bins.iter_mut().enumerate() {
            if (b as i64) < level.bounds.bins && sums.ns != 0 {
                let max = sums.max_depth.expect("a bin holding time has a depth");
                self.out
                    .bins
                    .push((k, seg, b as i64, max, sums.depth_ns, sums.ns));
                *sums = BinSums::default();
            }
        }
        if level.visited.0 <= level.visited.1 {
            self.out
                .visits
                .push((k, seg, level.visited.0, level.visited.1));
        }
        level.visited = (BIG, -BIG);
    }

    /// Whether the walk met a C whose request had no D (the orphan verdict is needed).
    pub fn undecided(&self) -> bool {
        !self.out.marks.is_empty()
    }

    /// The walk's sums with the boundaries settled: the C's of `orphans` (event ids) are left
    /// out; the other D-less C's requests were in flight from the trace start.
    pub fn settle(&self, orphans: &[i64]) -> Settled {
        let orphans: std::collections::HashSet<i64> = orphans.iter().copied().collect();
        let keys = self.levels.len();
        let mut whole = self.whole.clone();
        let mut bounds: Vec<(usize, i64)> = Vec::new();
        for &(k, t, eid, boundary) in &self.out.marks {
            if orphans.contains(&eid) {
                continue;
            }
            if boundary {
                bounds.push((k, t));
            } else {
                whole[k] += 1;
            }
        }
        let (shift, visited) = shifts(&self.out.moments, &bounds, &whole, keys);
        let shift_of = |k: usize, seg: i64| shift[k][seg as usize];
        let mut lo = vec![BIG; keys];
        let mut hi = vec![-BIG; keys];
        for &(k, seg, a, b) in &self.out.visits {
            lo[k] = lo[k].min(a + shift_of(k, seg));
            hi[k] = hi[k].max(b + shift_of(k, seg));
        }
        for (k, &(mlo, mhi)) in visited.iter().enumerate() {
            lo[k] = lo[k].min(mlo);
            hi[k] = hi[k].max(mhi);
        }
        let mut times: Vec<(usize, i64, i64)> = self
            .out
            .held
            .iter()
            .map(|&(k, seg, depth, ns)| (k, depth + shift_of(k, seg), ns))
            .collect();
        // every depth between the lowest and the highest visited is visited (steps are +-1)
        for k in 0..keys {
            if self.levels[k].present {
                times.extend((lo[k]..=hi[k]).map(|depth| (k, depth, 0)));
            }
        }
        let bins = self
            .out
            .bins
            .iter()
            .map(|&(k, seg, bin, max, dns, ns)| {
                let s = shift_of(k, seg);
                (k, bin, max + s, dns + s * ns, ns)
            })
            .collect();
        (times, bins)
    }
}

/// Per (key, segment): how much the walk's depths rise once the counted boundaries' requests
/// are in flight from the trace start; per key, the depths its special moments visit (the
/// trace start, where those requests' +1s come; each boundary moment, where their -1s do).
fn shifts(
    moments: &[Moment],
    bounds: &[(usize, i64)],
    whole: &[i64],
    keys: usize,
) -> (Vec<Vec<i64>>, Vec<(i64, i64)>) {
    let segments = moments.iter().map(|m| m.segment).max().unwrap_or(0) as usize + 1;
    let mut at: std::collections::HashMap<(usize, i64), i64> = std::collections::HashMap::new();
    for &(k, t) in bounds {
        *at.entry((k, t)).or_default() += 1;
    }
    let counted = |k: usize, t: i64| at.get(&(k, t)).copied().unwrap_or(0);
    // the counted boundaries of the moment that began each segment
    let mut starts = vec![vec![0i64; segments + 1]; keys];
    for m in moments.iter().filter(|m| !m.first) {
        starts[m.key][m.segment as usize] = counted(m.key, m.t);
    }
    // shift(k, s) = whole + the counted boundaries of every later segment start
    let shift: Vec<Vec<i64>> = (0..keys)
        .map(|k| {
            let mut after = 0;
            let mut row = vec![0i64; segments];
            for s in (0..segments).rev() {
                after += starts[k][s + 1];
                row[s] = whole[k] + after;
            }
            row
        })
        .collect();
    let mut total = whole.to_vec();
    for &(k, _) in bounds {
        total[k] += 1;
    }
    let mut visited = vec![(BIG, -BIG); keys];
    let mut see = |k: usize, (lo, hi): (i64, i64)| {
        visited[k] = (visited[k].0.min(lo), visited[k].1.max(hi));
    };
    for m in moments.iter().filter(|m| m.first) {
        let p0 = counted(m.key, m.t);
        see(
            m.key,
            visit_range(0, m.minus + p0, m.zeros, m.plus + total[m.key]),
        );
    }
    for m in moments.iter().filter(|m| !m.first) {
        let p = starts[m.key][m.segment as usize];
        let d0 = m.depth + shift[m.key][m.segment as usize] + p;
        see(m.key, visit_range(d0, m.minus + p, m.zeros, m.plus));
    }
    (shift, visited)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(steps: &[(i64, Delta, i64)], orphans: &[i64]) -> Settled {
        let bounds = [Some(Bounds {
            t0: 0,
            t1: 100,
            start: 0,
            width: 50,
            bins: 3,
        })];
        let mut w = DepthWalk::new(&bounds);
        for &(t, delta, eid) in steps {
            w.step(t, driver_key(0), delta, eid);
        }
        w.end_batch(i64::MAX).unwrap();
        w.end().unwrap();
        w.settle(orphans)
    }

    fn held(settled: &Settled) -> Vec<(i64, i64)> {
        let mut by_depth = std::collections::BTreeMap::new();
        for &(k, depth, ns) in &settled.0 {
            if k == driver_key(0) {
                *by_depth.entry(depth).or_insert(0) += ns;
            }
        }
        by_depth.into_iter().collect()
    }

    #[test]
    fn a_moment_applies_its_minus_ones_then_zeros_then_plus_ones() {
        // from depth 2 with two -1s, a 0 and three +1s: 1, 0, 0, 1, 2, 3 (each one visited)
        assert_eq!(visit_range(2, 2, 1, 3), (0, 3));
        assert_eq!(visit_range(2, 0, 0, 1), (3, 3)); // only a +1: the depth before is not one
        assert_eq!(visit_range(2, 1, 0, 0), (1, 1));
    }

    #[test]
    fn time_is_held_at_each_depth_until_the_next_step() {
        let s = walk(
            &[
                (10, Delta::Plus, 0),
                (20, Delta::Plus, 0),
                (60, Delta::Minus, 0),
            ],
            &[],
        );
        assert_eq!(held(&s), vec![(0, 10), (1, 10 + 40), (2, 40)]);
        // bins of 50 ns: [0, 50) holds 1 x 10 + 2 x 30, [50, 100) 2 x 10 + 1 x 40, [100, ..) 0
        let bins: Vec<_> = s.1.iter().map(|b| (b.1, b.2, b.3, b.4)).collect();
        assert!(bins.contains(&(0, 2, 10 + 2 * 30, 50)));
        assert!(bins.contains(&(1, 2, 2 * 10 + 40, 50)));
    }

    /// A small random number generator (xorshift64*), so that the property test below needs
    /// no crate: each case is reproducible from its seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> i64 {
            (self.next() % n) as i64
        }
    }

    type Sums = (
        std::collections::BTreeMap<(usize, i64), i64>,
        std::collections::BTreeMap<(usize, i64), (i64, i64, i64)>,
    );

    /// {(key, depth): ns held} and {(key, bin): (max depth, depth x ns, ns)} as the window over
    /// every step computed them before the walk: each key's steps sorted by (time, delta), a
    /// running sum, each row held until the next (the last until t1), cut at the bins.
    fn reference(steps: &[Vec<(i64, i64)>], t0: i64, t1: i64, bounds: Bounds) -> Sums {
        let (mut held, mut bins) = (Sums::default().0, Sums::default().1);
        for (k, key_steps) in steps.iter().enumerate() {
            let mut rows = vec![(t0, 0)];
            rows.extend(key_steps);
            rows.sort();
            let mut depth = 0;
            for (j, &(t, delta)) in rows.iter().enumerate() {
                depth += delta;
                let b = rows.get(j + 1).map_or(t1, |r| r.0);
                *held.entry((k, depth)).or_default() += b - t;
                if b <= t {
                    continue;
                }
                let (start, width) = (bounds.start, bounds.width);
                let last = ((b - 1 - start) / width).min(bounds.bins - 1);
                for x in (t - start) / width..=last {
                    let ns = b.min(start + (x + 1) * width) - t.max(start + x * width);
                    let e = bins.entry((k, x)).or_insert((depth, 0, 0));
                    *e = (e.0.max(depth), e.1 + depth * ns, e.2 + ns);
                }
            }
        }
        (held, bins)
    }

    fn sums(settled: &Settled) -> Sums {
        let (mut held, mut bins) = (Sums::default().0, Sums::default().1);
        for &(k, depth, ns) in &settled.0 {
            *held.entry((k, depth)).or_default() += ns;
        }
        for &(k, bin, max, dns, ns) in &settled.1 {
            let e = bins.entry((k, bin)).or_insert((max, 0, 0));
            *e = (e.0.max(max), e.1 + dns, e.2 + ns);
        }
        (held, bins)
    }

    #[test]
    fn the_walk_gives_what_the_sorted_window_over_every_step_gave() {
        // driver steps (-1, +1, a D-less C), queue steps (+1, -1; some written late, at the
        // trace end, with an earlier time), requests in flight for the whole trace, orphans,
        // bins of any width, and horizons the walk stops at: 3000 random cases
        for seed in 1..=3000u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let t0 = rng.below(6);
            let width = 1 + rng.below(9);
            let driver: Vec<(i64, i64)> = (0..rng.below(40))
                .map(|_| (t0 + rng.below(61), [-1, 1, 1, 2][rng.below(4) as usize]))
                .collect();
            let queue: Vec<(i64, i64, bool)> = (0..rng.below(40))
                .map(|_| {
                    (
                        t0 + rng.below(61),
                        [-1, 1][rng.below(2) as usize],
                        rng.below(3) == 0,
                    )
                })
                .collect();
            let whole = rng.below(3);
            let t1 = driver
                .iter()
                .map(|s| s.0)
                .chain(queue.iter().map(|s| s.0))
                .max()
                .unwrap_or(t0)
                .max(t0)
                + rng.below(5);
            let start = t0 - t0 % width;
            let bounds = Bounds {
                t0,
                t1,
                start,
                width,
                bins: (t1 - start) / width + 1,
            };
            let mut w = DepthWalk::new(&[Some(bounds)]);
            w.whole[driver_key(0)] = whole;
            // the pass's order: time order, ties in any order
            let mut pend: Vec<(i64, u64, Step)> = Vec::new();
            let mut orphans = Vec::new();
            for (j, &(t, d)) in driver.iter().enumerate() {
                let eid = 1000 + j as i64;
                let delta = match d {
                    -1 => Delta::Minus,
                    1 => Delta::Plus,
                    _ => {
                        if rng.below(2) == 0 {
                            orphans.push(eid);
                        }
                        Delta::Boundary
                    }
                };
                pend.push((
                    t,
                    rng.next(),
                    Step {
                        t,
                        key: driver_key(0),
                        delta,
                        eid,
                    },
                ));
            }
            let late: Vec<i64> = queue
                .iter()
                .filter(|q| q.1 == -1 && q.2)
                .map(|q| q.0)
                .collect();
            for &(t, d, is_late) in &queue {
                if d == -1 && is_late {
                    continue;
                }
                let delta = if d == 1 { Delta::Plus } else { Delta::Minus };
                pend.push((
                    t,
                    rng.next(),
                    Step {
                        t,
                        key: queue_key(0),
                        delta,
                        eid: 0,
                    },
                ));
            }
            pend.sort_by_key(|p| (p.0, p.1));
            for (_, _, s) in &pend {
                w.step(s.t, s.key, s.delta, s.eid);
            }
            let mut cuts: Vec<i64> = (0..rng.below(4)).map(|_| rng.below(71)).collect();
            cuts.sort();
            cuts.push(i64::MAX - t0);
            for until in cuts {
                // a bio waiting (its pieces settled) since `until`, or written late
                let horizon = late.iter().copied().chain([t0 + until]).min().unwrap();
                w.end_batch(horizon).unwrap();
                if horizon < t0 + until {
                    break; // the late bios hold the walk back until the end
                }
            }
            for &t in &late {
                w.bio_completed(t, 0);
            }
            w.end().unwrap();

            let mut steps = vec![vec![(t0, 1); whole as usize], Vec::new()];
            for (j, &(t, d)) in driver.iter().enumerate() {
                if d != 2 {
                    steps[0].push((t, d));
                } else if !orphans.contains(&(1000 + j as i64)) {
                    steps[0].extend([(t0, 1), (t, -1)]);
                }
            }
            steps[1] = queue.iter().map(|q| (q.0, q.1)).collect();
            assert_eq!(
                sums(&w.settle(&orphans)),
                reference(&steps, t0, t1, bounds),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_dispatchless_completion_counts_from_the_trace_start_unless_an_orphan() {
        let steps = [
            (10, Delta::Plus, 0),
            (30, Delta::Boundary, 77),
            (50, Delta::Minus, 0),
        ];
        // counted: in flight from t0 until its C at 30
        assert_eq!(held(&walk(&steps, &[])), vec![(0, 50), (1, 30), (2, 20)]);
        // an orphan: left out
        assert_eq!(held(&walk(&steps, &[77])), vec![(0, 10 + 50), (1, 40)]);
    }
}
