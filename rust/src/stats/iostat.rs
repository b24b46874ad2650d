//! iostat's counts per device and interval (sql/_iostat_build.sql), kept as the analysis goes
//! instead of read back from its files: the requests the disk statistics count, summed as the
//! pass hands each batch of requests over (`Completions`), and the merges, counted as the pass
//! meets each M or F (`Merges`). The SQL then only lays them out in the intervals.

use super::hash::FastMap;

/// The intervals of the iostat table: `length` ns each, one starting at `origin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intervals {
    length: i64,
    origin: i64,
}

impl Intervals {
    /// Intervals of `length` ns (positive), one starting at `origin` (trace ns).
    pub fn new(length: i64, origin: i64) -> Result<Intervals, String> {
        if length <= 0 {
            return Err(format!("interval must be positive, got {length} ns"));
        }
        Ok(Intervals { length, origin })
    }

    /// The interval of time t, as the SQL computes it: `floor((t - origin) / length)::BIGINT`,
    /// where DuckDB subtracts exactly (an error past BIGINT) and divides in double precision.
    pub fn index(&self, t: i64) -> Result<i64, String> {
        let since = t
            .checked_sub(self.origin)
            .ok_or_else(|| format!("time {t} ns minus the origin {} ns overflows", self.origin))?;
        let k = (since as f64 / self.length as f64).floor();
        // 2^63 is the first double past BIGINT: DuckDB refuses the cast from it on
        if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&k) {
            return Err(format!("the interval of time {t} ns is out of range"));
        }
        Ok(k as i64)
    }
}

/// The kinds of request that `_iostat_requests` counts, by what the pass knows of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    /// Any other op (a discard, a flush): counted in aqu-sz only.
    Other,
}

/// One counted request: its device, op, length in sectors (None: null), its completion and
/// where its await starts.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub major: i32,
    pub minor: i32,
    pub op: Op,
    pub nsectors: Option<i64>,
    pub c_time_ns: i64,
    pub start_ns: i64,
}

/// The `done` sums of one device's interval: the reads and writes completed in it, their
/// sectors, and the awaits (C minus the start) of the reads, the writes and all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Done {
    pub reads: i64,
    pub writes: i64,
    pub read_sectors: i128,
    pub write_sectors: i128,
    pub read_wait_ns: i128,
    pub write_wait_ns: i128,
    pub wait_ns: i128,
}

/// The `done` sums per (device major, minor, interval).
pub struct Completions {
    intervals: Intervals,
    pub sums: FastMap<(i32, i32, i64), Done>,
}

impl Completions {
    pub fn new(intervals: Intervals) -> Completions {
        Completions {
            intervals,
            sums: FastMap::default(),
        }
    }

    /// Count one request into the interval of its completion; Err where the SQL's BIGINT
    /// arithmetic would fail (its await, or its interval, out of range).
    pub fn add(&mut self, r: &Completion) -> Result<(), String> {
        let k = self.intervals.index(r.c_time_ns)?;
        let wait = i128::from(r.c_time_ns.checked_sub(r.start_ns).ok_or_else(|| {
            format!(
                "the await from {} ns to {} ns overflows",
                r.start_ns, r.c_time_ns
            )
        })?);
        let sectors = i128::from(r.nsectors.unwrap_or(0));
        let done = self.sums.entry((r.major, r.minor, k)).or_default();
        match r.op {
            Op::Read => {
                done.reads += 1;
                done.read_sectors += sectors;
                done.read_wait_ns += wait;
            }
            Op::Write => {
                done.writes += 1;
                done.write_sectors += sectors;
                done.write_wait_ns += wait;
            }
            Op::Other => {}
        }
        done.wait_ns += wait;
        Ok(())
    }
}

/// The M and F events per (device index, interval): [reads, writes].
pub struct Merges {
    intervals: Intervals,
    pub counts: FastMap<(usize, i64), [i64; 2]>,
}

impl Merges {
    pub fn new(intervals: Intervals) -> Merges {
        Merges {
            intervals,
            counts: FastMap::default(),
        }
    }

    /// Count one merge (M or F) of device `dev` at time t; a merge of another op than a read
    /// or a write counts in no column, as in the SQL, but its interval still has a row.
    pub fn add(&mut self, dev: usize, op: Op, t: i64) -> Result<(), String> {
        let k = self.intervals.index(t)?;
        let counts = self.counts.entry((dev, k)).or_default();
        match op {
            Op::Read => counts[0] += 1,
            Op::Write => counts[1] += 1,
            Op::Other => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_the_floor_of_the_time_since_the_origin() {
        let iv = Intervals::new(1_000, 500).unwrap();
        assert_eq!(iv.index(500).unwrap(), 0);
        assert_eq!(iv.index(1_499).unwrap(), 0);
        assert_eq!(iv.index(1_500).unwrap(), 1);
        assert_eq!(iv.index(499).unwrap(), -1);
        assert_eq!(iv.index(-1_501).unwrap(), -3);
    }

    #[test]
    fn an_interval_is_divided_in_double_precision_as_the_sql_does() {
        // 2^53 + 1 is no double: it rounds to 2^53 before the division, as DuckDB's does
        let iv = Intervals::new(1, 0).unwrap();
        assert_eq!(iv.index((1 << 53) + 1).unwrap(), 1 << 53);
    }

    #[test]
    fn out_of_range_arithmetic_is_an_error() {
        assert!(Intervals::new(0, 0).is_err());
        let iv = Intervals::new(1, -10).unwrap();
        assert!(iv.index(i64::MAX).is_err()); // the subtraction overflows
        assert!(Intervals::new(1, 0).unwrap().index(i64::MAX).is_err()); // 2^63 after rounding
    }

    fn completion(op: Op, nsectors: Option<i64>, c: i64, start: i64) -> Completion {
        Completion {
            major: 8,
            minor: 0,
            op,
            nsectors,
            c_time_ns: c,
            start_ns: start,
        }
    }

    #[test]
    fn completions_sum_per_interval_of_their_c() {
        let mut done = Completions::new(Intervals::new(100, 0).unwrap());
        done.add(&completion(Op::Read, Some(8), 150, 100)).unwrap();
        done.add(&completion(Op::Write, Some(16), 199, 20)).unwrap();
        done.add(&completion(Op::Other, None, 120, 110)).unwrap();
        done.add(&completion(Op::Write, None, 250, 240)).unwrap();
        let expected = Done {
            reads: 1,
            writes: 1,
            read_sectors: 8,
            write_sectors: 16,
            read_wait_ns: 50,
            write_wait_ns: 179,
            wait_ns: 50 + 179 + 10,
        };
        assert_eq!(done.sums[&(8, 0, 1)], expected);
        assert_eq!(done.sums[&(8, 0, 2)].write_wait_ns, 10);
        assert_eq!(done.sums.len(), 2);
    }

    #[test]
    fn an_await_past_bigint_is_an_error() {
        let mut done = Completions::new(Intervals::new(100, 0).unwrap());
        assert!(done
            .add(&completion(Op::Read, Some(8), i64::MAX, -1))
            .is_err());
    }

    #[test]
    fn merges_count_per_device_interval_and_op() {
        let mut merges = Merges::new(Intervals::new(10, 0).unwrap());
        for (op, t) in [
            (Op::Read, 1),
            (Op::Read, 9),
            (Op::Write, 10),
            (Op::Other, 25),
        ] {
            merges.add(0, op, t).unwrap();
        }
        assert_eq!(merges.counts[&(0, 0)], [2, 0]);
        assert_eq!(merges.counts[&(0, 1)], [0, 1]);
        assert_eq!(merges.counts[&(0, 2)], [0, 0]);
    }
}
