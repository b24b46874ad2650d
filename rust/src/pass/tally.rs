//! The `bios` and `requests` rows counted as the pass writes them, by device, op letter, RWBS,
//! whether a sector is known and (requests) kind: the device summary and `io_ratios` read these
//! few rows instead of scanning both tables again. The op class is not decided here: SQL
//! applies the `op_class` macro, its one definition, to each counted key
//! (sql/_bio_counts_build.sql, _request_counts_build.sql).

use std::hash::Hash;

use super::event::Op;
use super::rows::{BioRow, RequestKind, RequestRow};
use crate::hash::FastMap;

/// What a row is counted under: its device, op letter, RWBS code and whether it has a sector
/// (the three inputs of `op_class`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct OpKey {
    pub dev: usize,
    pub op: Op,
    pub rwbs: Option<u32>,
    pub has_sector: bool,
}

impl OpKey {
    pub fn new(dev: usize, op: Op, rwbs: Option<u32>, sector: Option<i64>) -> OpKey {
        OpKey {
            dev,
            op,
            rwbs,
            has_sector: sector.is_some(),
        }
    }
}

/// The counts of `bios` rows of one key.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct BioCounts {
    pub bios: i64,
    pub merged: i64,
    pub split: i64,
    /// X events taken: pieces - 1 per bio.
    pub splits: i64,
    pub partial: i64,
}

/// The counts of `requests` rows of one key and kind.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct RequestCounts {
    pub requests: i64,
    pub dispatches: i64,
    /// Rows with a C.
    pub completions: i64,
    pub requeues: i64,
    pub partial: i64,
}

/// Every row written so far, counted.
#[derive(Default)]
pub struct Tally {
    bios: FastMap<OpKey, BioCounts>,
    requests: FastMap<(OpKey, RequestKind), RequestCounts>,
}

impl Tally {
    /// Count bios rows as they are handed over (each row once).
    pub fn add_bios(&mut self, rows: &[BioRow]) {
        count_runs(
            &mut self.bios,
            rows,
            |r| OpKey::new(r.dev, r.op, r.rwbs, r.sector),
            |c: &mut BioCounts, r| {
                c.bios += 1;
                c.merged += i64::from(r.merged);
                c.split += i64::from(r.pieces > 1);
                c.splits += r.pieces - 1;
                c.partial += i64::from(r.partial);
            },
        );
    }

    /// Count requests rows as they are handed over, with their final kind (a held request is
    /// counted once the orphan verdict set it).
    pub fn add_requests(&mut self, rows: &[RequestRow]) {
        count_runs(
            &mut self.requests,
            rows,
            |r| (OpKey::new(r.dev, r.op, r.rwbs, r.sector), r.kind),
            |c: &mut RequestCounts, r| {
                c.requests += 1;
                c.dispatches += r.life.dispatches;
                c.completions += i64::from(r.life.c_t.is_some());
                c.requeues += r.life.requeues;
                c.partial += i64::from(r.partial);
            },
        );
    }

    /// The bios' counts, in key order (the output does not depend on the hash map's order).
    pub fn bios(&self) -> Vec<(OpKey, BioCounts)> {
        let mut out: Vec<_> = self.bios.iter().map(|(k, c)| (*k, *c)).collect();
        out.sort_by_key(|(k, _)| sort_key(k));
        out
    }

    /// The requests' counts, in key order.
    pub fn requests(&self) -> Vec<(OpKey, RequestKind, RequestCounts)> {
        let mut out: Vec<_> = self
            .requests
            .iter()
            .map(|((k, kind), c)| (*k, *kind, *c))
            .collect();
        out.sort_by_key(|(k, kind, _)| (sort_key(k), *kind as u8));
        out
    }
}

fn sort_key(k: &OpKey) -> (usize, u8, Option<u32>, bool) {
    (k.dev, k.op as u8, k.rwbs, k.has_sector)
}

/// Counts that add up: a run of rows counted apart, then added to the map's entry once.
trait Sum: Default + Copy {
    fn add(&mut self, other: &Self);
}

impl Sum for BioCounts {
    fn add(&mut self, o: &Self) {
        self.bios += o.bios;
        self.merged += o.merged;
        self.split += o.split;
        self.splits += o.splits;
        self.partial += o.partial;
    }
}

impl Sum for RequestCounts {
    fn add(&mut self, o: &Self) {
        self.requests += o.requests;
        self.dispatches += o.dispatches;
        self.completions += o.completions;
        self.requeues += o.requeues;
        self.partial += o.partial;
    }
}

/// Count each row under its key, a run of rows with one key at a time: rows come in long runs
/// of one key (one device, op and RWBS), and the map is then looked up once a run, not once a
/// row.
fn count_runs<R, K: Copy + Eq + Hash, C: Sum>(
    map: &mut FastMap<K, C>,
    rows: &[R],
    key_of: impl Fn(&R) -> K,
    count: impl Fn(&mut C, &R),
) {
    let mut run: Option<(K, C)> = None;
    for r in rows {
        let key = key_of(r);
        match &mut run {
            Some((k, c)) if *k == key => count(c, r),
            _ => {
                if let Some((k, c)) = run.take() {
                    map.entry(k).or_default().add(&c);
                }
                let mut c = C::default();
                count(&mut c, r);
                run = Some((key, c));
            }
        }
    }
    if let Some((k, c)) = run {
        map.entry(k).or_default().add(&c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::rows::RequestLife;

    fn bio(dev: usize, op: Op, sector: Option<i64>, pieces: i64, merged: bool) -> BioRow {
        BioRow {
            dev,
            op,
            rwbs: Some(1),
            sector,
            nsectors: Some(8),
            pid: 1,
            comm: None,
            q_t: 0,
            g_t: None,
            m_t: None,
            i_t: None,
            d_t: None,
            c_t: None,
            d2c: None,
            merged,
            pieces,
            requeues: None,
            partial: false,
            remap: Default::default(),
            q_eid: 0,
            d_eid: None,
            q2q: [None; 4],
            group: 0,
        }
    }

    #[test]
    fn bios_are_counted_by_key_with_their_splits_and_merges() {
        let mut t = Tally::default();
        t.add_bios(&[
            bio(0, Op::Write, Some(8), 3, false),
            bio(0, Op::Write, Some(16), 1, true),
        ]);
        t.add_bios(&[bio(0, Op::Write, None, 1, false)]);
        let got = t.bios();
        // in key order: without a sector before with one
        assert_eq!(got.len(), 2);
        assert!(!got[0].0.has_sector && got[1].0.has_sector);
        assert_eq!(got[0].1.bios, 1);
        assert_eq!(
            got[1].1,
            BioCounts {
                bios: 2,
                merged: 1,
                split: 1,
                splits: 2,
                partial: 0
            }
        );
    }

    #[test]
    fn keys_that_alternate_count_as_if_counted_one_row_at_a_time() {
        // runs of one key are summed apart, then added: A A B A B B must give A 3, B 3
        let (a, b) = (Some(8), None);
        let mut t = Tally::default();
        t.add_bios(&[
            bio(0, Op::Write, a, 2, false),
            bio(0, Op::Write, a, 1, true),
            bio(0, Op::Write, b, 1, false),
            bio(0, Op::Write, a, 3, false),
            bio(0, Op::Write, b, 1, true),
            bio(0, Op::Write, b, 1, false),
        ]);
        let got = t.bios();
        let counts = |bios, merged, split, splits| BioCounts {
            bios,
            merged,
            split,
            splits,
            partial: 0,
        };
        assert_eq!(got[0].1, counts(3, 1, 0, 0)); // without a sector
        assert_eq!(got[1].1, counts(3, 1, 2, 3)); // with one
    }

    #[test]
    fn requests_are_counted_by_kind() {
        let row = |kind, c_t, dispatches| RequestRow {
            dev: 1,
            op: Op::Read,
            sector: Some(0),
            nsectors: Some(8),
            kind,
            rwbs: None,
            q_t: None,
            g_t: None,
            acct_start: None,
            life: RequestLife {
                c_t,
                dispatches,
                requeues: (dispatches - 1).max(0),
                ..RequestLife::default()
            },
            partial: c_t.is_none(),
            pid: None,
            process: None,
        };
        let mut t = Tally::default();
        t.add_requests(&[
            row(RequestKind::Data, Some(5), 2),
            row(RequestKind::Data, None, 1),
            row(RequestKind::Orphan, Some(9), 0),
        ]);
        let got = t.requests();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1, RequestKind::Data);
        assert_eq!(
            got[0].2,
            RequestCounts {
                requests: 2,
                dispatches: 3,
                completions: 1,
                requeues: 1,
                partial: 1
            }
        );
        assert_eq!((got[1].1, got[1].2.completions), (RequestKind::Orphan, 1));
    }
}
