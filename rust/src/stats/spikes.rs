//! The spike windows the findings judge (src/blkscope/analyze/findings.py, the SQL macro
//! `_spike_windows`): per device and window of completion time, how many complete bios
//! completed, their 99th percentile latency (quantile_disc's), the slowest and when it
//! completed. Read beside latency_heatmap's cells, from the same look at each completing bio:
//! the SQL read every bio twice more (a count per window, then each window's slowest).

use super::hash::FastMap;

/// Which latency a spike window judges (the findings' `metric`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// queue to completion
    Q2C,
    /// dispatch to completion
    D2C,
}

impl Metric {
    /// The metric the findings name ('q2c' or 'd2c'; None for another).
    pub fn named(name: &str) -> Option<Metric> {
        match name {
            "q2c" => Some(Metric::Q2C),
            "d2c" => Some(Metric::D2C),
            _ => None,
        }
    }

    /// The bios' column that holds it.
    pub fn column(self) -> &'static str {
        match self {
            Metric::Q2C => "q2c_ns",
            Metric::D2C => "d2c_ns",
        }
    }
}

/// One window: (device major, device minor, window number from trace zero).
pub type WindowKey = (i32, i32, i64);

/// One window's latencies so far, with the slowest and when it completed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    latencies: Vec<i64>,
    max_ns: i64,
    peak_ns: i64,
}

/// One window as the findings read it (the columns of `_spike_windows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowRow {
    pub key: WindowKey,
    pub ios: i64,
    pub p99_ns: i64,
    pub max_ns: i64,
    pub peak_ns: i64,
}

/// The windows of every completing bio seen.
#[derive(Debug)]
pub struct SpikeWindows {
    window_ns: i64,
    /// each window's place in `windows`
    places: FastMap<WindowKey, usize>,
    windows: Vec<(WindowKey, Window)>,
    /// the window the last bio fell in: bios come near completion order, so mostly the next
    /// one's too, found without a lookup
    last: Option<(WindowKey, usize)>,
}

impl SpikeWindows {
    /// Windows of window_ns (> 0) ns from trace zero.
    pub fn new(window_ns: i64) -> SpikeWindows {
        SpikeWindows {
            window_ns,
            places: FastMap::default(),
            windows: Vec::new(),
            last: None,
        }
    }

    /// The window a completion falls in: `c_time_ns // window_ns` as DuckDB divides integers,
    /// toward zero (a completion 1 ns before trace zero falls in window 0).
    pub fn window_of(&self, c_time_ns: i64) -> i64 {
        c_time_ns / self.window_ns
    }

    /// One complete bio's judged latency, completed at c_time_ns. The slowest of a window is
    /// the first completed among equal latencies: a tie the SQL's arg_max left to the order
    /// it met them in.
    pub fn add(&mut self, major: i32, minor: i32, c_time_ns: i64, latency_ns: i64) {
        let key = (major, minor, self.window_of(c_time_ns));
        let place = match self.last {
            Some((last, place)) if last == key => place,
            _ => {
                let next = self.windows.len();
                let place = *self.places.entry(key).or_insert(next);
                if place == next {
                    self.windows.push((key, Window::default()));
                }
                self.last = Some((key, place));
                place
            }
        };
        let w = &mut self.windows[place].1;
        if w.latencies.is_empty()
            || latency_ns > w.max_ns
            || (latency_ns == w.max_ns && c_time_ns < w.peak_ns)
        {
            w.max_ns = latency_ns;
            w.peak_ns = c_time_ns;
        }
        w.latencies.push(latency_ns);
    }

    /// Every window, in (device, window) order, with quantile_disc's p99: the latency at
    /// 0-based rank ceil(0.99 n) - 1 of the n sorted.
    pub fn rows(self) -> Vec<WindowRow> {
        let mut rows: Vec<WindowRow> = self
            .windows
            .into_iter()
            .map(|(key, mut w)| {
                let n = w.latencies.len();
                let rank = (n * 990).div_ceil(1000) - 1;
                let (_, p99, _) = w.latencies.select_nth_unstable(rank);
                WindowRow {
                    key,
                    ios: n as i64,
                    p99_ns: *p99,
                    max_ns: w.max_ns,
                    peak_ns: w.peak_ns,
                }
            })
            .collect();
        rows.sort_unstable_by_key(|r| r.key);
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_window(latencies: &[i64]) -> WindowRow {
        let mut w = SpikeWindows::new(1_000);
        for (i, &ns) in latencies.iter().enumerate() {
            w.add(8, 0, 100 + i as i64, ns);
        }
        let rows = w.rows();
        assert_eq!(rows.len(), 1);
        rows[0]
    }

    #[test]
    fn p99_is_quantile_discs_rank() {
        // n = 100: rank ceil(99) - 1 = 98, the 99th smallest
        let latencies: Vec<i64> = (1..=100).rev().collect();
        assert_eq!(one_window(&latencies).p99_ns, 99);
        // n = 101: rank ceil(99.99) - 1 = 99, the 100th smallest
        let latencies: Vec<i64> = (1..=101).collect();
        assert_eq!(one_window(&latencies).p99_ns, 100);
        // one latency is its own p99
        assert_eq!(one_window(&[7]).p99_ns, 7);
    }

    #[test]
    fn the_slowest_is_the_first_completed_on_a_tie() {
        let row = one_window(&[5, 9, 3, 9]);
        assert_eq!((row.ios, row.max_ns, row.peak_ns), (4, 9, 101));
    }

    #[test]
    fn windows_divide_toward_zero_and_come_in_order() {
        let mut w = SpikeWindows::new(1_000);
        w.add(8, 16, 2_500, 1);
        w.add(8, 0, -1_500, 2);
        w.add(8, 0, -999, 3);
        w.add(8, 0, 999, 4);
        let keys: Vec<WindowKey> = w.rows().iter().map(|r| r.key).collect();
        assert_eq!(keys, vec![(8, 0, -1), (8, 0, 0), (8, 16, 2)]);
    }
}
