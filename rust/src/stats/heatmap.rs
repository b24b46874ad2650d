//! latency_heatmap's cells (sql/_latency_heatmap_build.sql): per device, stage (D2C, Q2C),
//! time bin and quarter-octave latency bucket, how many bios completed there, how many of them
//! the observer's, the largest latency and who waited it. DuckDB grouped two rows per bio and
//! picked the slowest by a struct compared per row; here each bio is looked at once.

use super::hash::FastMap;

/// The stages the heatmap draws, by code: 0 D2C, 1 Q2C.
pub const STAGES: [&str; 2] = ["D2C", "Q2C"];

/// The quarter-octave bucket of a latency: bucket 4e + k holds [(4 + k) 2^(e-2),
/// (5 + k) 2^(e-2)) ns for e >= 2; a latency under 4 ns has a bucket each (negative ones 0).
pub fn bucket(ns: i64) -> i32 {
    if ns < 4 {
        return ns.max(0) as i32;
    }
    let e = 63 - ns.leading_zeros() as i32;
    4 * e + ((ns >> (e - 2)) & 3) as i32
}

/// One cell: (device major, device minor, stage code, time bin, bucket).
pub type CellKey = (i32, i32, u8, i64, i32);

/// The bio that waited longest in a cell: the largest latency, the first to complete on a tie,
/// then the greatest name (merged bios tie on both).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slowest {
    pub ns: i64,
    pub c_time_ns: i64,
    pub comm: String,
}

impl Slowest {
    /// Whether a bio (ns, completed at c_time_ns, by comm) waited longer than this one.
    fn beaten_by(&self, ns: i64, c_time_ns: i64, comm: &str) -> bool {
        (ns, std::cmp::Reverse(c_time_ns), comm)
            > (
                self.ns,
                std::cmp::Reverse(self.c_time_ns),
                self.comm.as_str(),
            )
    }
}

/// The counts of one cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub n: i64,
    pub observer_n: i64,
    pub slowest: Slowest,
}

/// One bio completing, as the heatmap sees it.
#[derive(Clone, Copy, Debug)]
pub struct Completion<'a> {
    pub dev_major: i32,
    pub dev_minor: i32,
    pub bin: i64,
    pub c_time_ns: i64,
    pub comm: &'a str,
    pub observer: bool,
}

/// Each device's time bins (time_bins): bin k of a device holds its completions in
/// [start + k width, start + (k + 1) width).
#[derive(Clone, Debug, Default)]
pub struct TimeBins {
    /// (major, minor, start_ns, width_ns) per device
    devices: Vec<(i32, i32, i64, i64)>,
}

impl TimeBins {
    /// The bins of these devices: (major, minor, start_ns, width_ns > 0) each.
    pub fn new(devices: Vec<(i32, i32, i64, i64)>) -> Result<TimeBins, String> {
        if let Some(d) = devices.iter().find(|d| d.3 <= 0) {
            return Err(format!("time bins of {}:{} have width {}", d.0, d.1, d.3));
        }
        Ok(TimeBins { devices })
    }

    /// The bin of a completion at c_time_ns on a device, `(c_time_ns - start) // width` as
    /// DuckDB divides integers (toward zero); None for a device without bins (the SQL joined
    /// the bios on their device's bins, which dropped it). Err when the difference passes
    /// int64, as DuckDB's subtraction fails.
    pub fn bin(&self, major: i32, minor: i32, c_time_ns: i64) -> Result<Option<i64>, String> {
        let Some(&(_, _, start, width)) =
            self.devices.iter().find(|d| d.0 == major && d.1 == minor)
        else {
            return Ok(None);
        };
        let since = c_time_ns
            .checked_sub(start)
            .ok_or_else(|| format!("time bin of {c_time_ns} ns: the time passes int64"))?;
        Ok(Some(since / width))
    }
}

/// Every cell so far.
#[derive(Default)]
pub struct Heatmap {
    pub cells: FastMap<CellKey, Cell>,
}

impl Heatmap {
    /// Count one latency of a completing bio in its cell.
    pub fn add(&mut self, at: &Completion<'_>, stage: u8, ns: i64) {
        let key = (at.dev_major, at.dev_minor, stage, at.bin, bucket(ns));
        let observed = i64::from(at.observer);
        match self.cells.get_mut(&key) {
            Some(cell) => {
                cell.n += 1;
                cell.observer_n += observed;
                if cell.slowest.beaten_by(ns, at.c_time_ns, at.comm) {
                    cell.slowest.ns = ns;
                    cell.slowest.c_time_ns = at.c_time_ns;
                    cell.slowest.comm.clear();
                    cell.slowest.comm.push_str(at.comm);
                }
            }
            None => {
                let slowest = Slowest {
                    ns,
                    c_time_ns: at.c_time_ns,
                    comm: at.comm.to_string(),
                };
                self.cells.insert(
                    key,
                    Cell {
                        n: 1,
                        observer_n: observed,
                        slowest,
                    },
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(c_time_ns: i64, comm: &str, observer: bool) -> Completion<'_> {
        Completion {
            dev_major: 8,
            dev_minor: 0,
            bin: 3,
            c_time_ns,
            comm,
            observer,
        }
    }

    #[test]
    fn bins_divide_toward_zero_per_device() {
        let bins = TimeBins::new(vec![(8, 0, 1_000, 100), (8, 16, 0, 7)]).unwrap();
        assert_eq!(bins.bin(8, 0, 1_250), Ok(Some(2)));
        assert_eq!(bins.bin(8, 0, 950), Ok(Some(0)));
        assert_eq!(bins.bin(8, 0, 899), Ok(Some(-1)));
        assert_eq!(bins.bin(8, 16, 14), Ok(Some(2)));
        assert_eq!(bins.bin(259, 0, 14), Ok(None));
        assert!(bins.bin(8, 16, i64::MIN).is_ok());
        assert!(TimeBins::new(vec![(8, 0, 0, 0)]).is_err());
        let far = TimeBins::new(vec![(8, 0, 1, 1)]).unwrap();
        assert!(far.bin(8, 0, i64::MIN).is_err());
    }

    #[test]
    fn buckets_are_quarter_octaves() {
        assert_eq!(bucket(-5), 0);
        assert_eq!(bucket(3), 3);
        assert_eq!(bucket(4), 8); // e = 2, k = 0: [4, 5)
        assert_eq!(bucket(7), 11); // [7, 8)
        assert_eq!(bucket(8), 12); // e = 3: [8, 10)
        assert_eq!(bucket(1000), 4 * 9 + 3); // 2^9 = 512: [896, 1024)
        assert_eq!(bucket(i64::MAX), 4 * 62 + 3);
    }

    #[test]
    fn a_cell_counts_its_bios_and_the_observers() {
        let mut map = Heatmap::default();
        map.add(&at(10, "fio", false), 0, 1000);
        map.add(&at(11, "iostat", true), 0, 1001);
        let cell = &map.cells[&(8, 0, 0, 3, bucket(1000))];
        assert_eq!((cell.n, cell.observer_n, cell.slowest.ns), (2, 1, 1001));
        assert_eq!(cell.slowest.comm, "iostat");
    }

    #[test]
    fn on_a_tie_the_first_to_complete_is_the_slowest() {
        let mut map = Heatmap::default();
        map.add(&at(20, "late", false), 1, 1000);
        map.add(&at(10, "early", false), 1, 1000);
        map.add(&at(30, "later", false), 1, 1000);
        assert_eq!(map.cells[&(8, 0, 1, 3, bucket(1000))].slowest.comm, "early");
    }

    #[test]
    fn on_a_tie_of_both_the_greatest_name_is_the_slowest() {
        let mut map = Heatmap::default();
        map.add(&at(10, "kworker", false), 0, 1000);
        map.add(&at(10, "fio", false), 0, 1000);
        assert_eq!(
            map.cells[&(8, 0, 0, 3, bucket(1000))].slowest.comm,
            "kworker"
        );
    }

    #[test]
    fn stages_and_bins_are_cells_of_their_own() {
        let mut map = Heatmap::default();
        map.add(&at(10, "fio", false), 0, 1000);
        map.add(&at(10, "fio", false), 1, 1000);
        map.add(
            &Completion {
                bin: 4,
                ..at(10, "fio", false)
            },
            0,
            1000,
        );
        assert_eq!(map.cells.len(), 3);
    }
}
