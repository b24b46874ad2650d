//! io_dist's counts, kept as the pass walks each device's Qs and Ds in time order: the sizes,
//! and the seek from where the device's previous Q (D) ended to this one's start. The
//! `io_dist` table (sql/_io_dist_build.sql) only names and orders them.

use super::event::{Action, Event};
use super::state::Pass;

/// The metrics, in the order of their codes.
pub const METRICS: [&str; 4] = ["q_size", "d_size", "d2d_seek", "q2q_seek"];
const Q_SIZE: usize = 0;
const D_SIZE: usize = 1;
const D2D_SEEK: usize = 2;
const Q2Q_SEEK: usize = 3;
/// events.op is R, W, D or N.
pub const OPS: usize = 4;
/// log2 buckets -1 (v <= 0) to 63.
pub const BUCKETS: usize = 65;

/// concepts.log2_bucket: b with 2^b <= v < 2^(b+1), -1 for v <= 0 (exact for every BIGINT).
pub fn log2_bucket(v: i64) -> i64 {
    if v <= 0 {
        -1
    } else {
        63 - i64::from(v.leading_zeros())
    }
}

/// (count, total) per (device, op, metric, bucket).
pub struct IoCounts {
    counts: Vec<[i64; 2]>,
}

/// One non-empty bucket: (device index, op, metric, bucket, count, total).
pub type IoBucket = (usize, usize, usize, i64, i64, i64);

impl IoCounts {
    pub fn new(devices: usize) -> IoCounts {
        IoCounts {
            counts: vec![[0; 2]; devices * OPS * METRICS.len() * BUCKETS],
        }
    }

    fn add(&mut self, dev: usize, op: usize, metric: usize, v: i64) {
        let bucket = (log2_bucket(v) + 1) as usize;
        let row = ((dev * OPS + op) * METRICS.len() + metric) * BUCKETS + bucket;
        self.counts[row][0] += 1;
        self.counts[row][1] = self.counts[row][1].wrapping_add(v);
    }

    /// Every bucket holding a value.
    pub fn buckets(&self) -> Vec<IoBucket> {
        let per_metric = BUCKETS;
        let per_op = per_metric * METRICS.len();
        let per_dev = per_op * OPS;
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| c[0] != 0)
            .map(|(row, c)| {
                let bucket = (row % per_metric) as i64 - 1;
                let metric = row / per_metric % METRICS.len();
                let op = row / per_op % OPS;
                (row / per_dev, op, metric, bucket, c[0], c[1])
            })
            .collect()
    }
}

impl Pass {
    /// Count a Q's or D's size and its seek from the end of the device's previous one (an
    /// event without a sector or a length is not counted, like io_dist's `sector IS NOT NULL
    /// AND nsectors > 0`).
    pub fn count_io(&mut self, ev: &Event) {
        let (size, seek) = match ev.action {
            Action::Queue => (Q_SIZE, Q2Q_SEEK),
            Action::Dispatch => (D_SIZE, D2D_SEEK),
            _ => return,
        };
        let (Some(sector), Some(n)) = (ev.sector, ev.nsectors) else {
            return;
        };
        if n <= 0 {
            return;
        }
        let device = &mut self.devices[ev.dev];
        let end = if size == Q_SIZE {
            &mut device.q_end
        } else {
            &mut device.d_end
        };
        let previous = end.replace(sector + n);
        let op = ev.op as usize;
        self.io.add(ev.dev, op, size, n);
        if let Some(previous) = previous {
            self.io.add(ev.dev, op, seek, (sector - previous).abs());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_the_power_of_two_below() {
        assert_eq!(log2_bucket(0), -1);
        assert_eq!(log2_bucket(-5), -1);
        assert_eq!(log2_bucket(1), 0);
        assert_eq!(log2_bucket(8), 3);
        assert_eq!(log2_bucket(15), 3);
        assert_eq!(log2_bucket(i64::MAX), 62);
    }

    #[test]
    fn a_bucket_row_names_its_device_op_and_metric() {
        let mut io = IoCounts::new(2);
        io.add(1, 2, D2D_SEEK, 4096);
        io.add(1, 2, D2D_SEEK, 5000);
        assert_eq!(io.buckets(), vec![(1, 2, D2D_SEEK, 12, 2, 9096)]);
    }
}

#[cfg(test)]
mod pass_tests {
    use super::super::event::Action::*;
    use super::super::testing::{bare, ev, Trace};
    use super::*;

    #[test]
    fn sizes_and_seeks_follow_each_devices_queues_and_dispatches() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Queue, 0, 8),
            ev(Queue, 100, 8),
            bare(Queue), // no sector: not counted, and no seek from it
            ev(Dispatch, 0, 16),
            ev(Dispatch, 0, 0), // no length: not counted
        ]);
        let w = 1; // Op::Write
        let buckets = trace.pass.io.buckets();
        assert_eq!(
            buckets,
            vec![
                (0, w, Q_SIZE, 3, 2, 16),
                (0, w, D_SIZE, 4, 1, 16),
                (0, w, Q2Q_SEEK, 6, 1, 92),
            ]
        );
    }
}
