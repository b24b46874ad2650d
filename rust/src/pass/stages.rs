//! The counts `stage_stats` and `latency_hist` start from (sql/_stage_buckets.sql), kept as the
//! bios' rows are handed over to columns: per reporting group (the Q2Q file's `group_key`),
//! scope, stage and value bucket, the count, smallest, largest and sum of the bios' stage
//! latencies. DuckDB grouped every latency of every bio for them (the long form,
//! `_bio_stages`: ~11 rows a bio); it now sums these counts into its levels and finds each
//! percentile's bucket from them, and reads the latencies again only for the buckets that
//! hold a percentile (_stage_stats_build.sql).
//!
//! What a latency is and which bucket holds it are the SQL macros `bio_stage_ns` and
//! `value_bucket` (src/blkscope/concepts.py), their definition; `bio_stage_ns` and
//! `value_bucket` (crate::buckets) compute the same, and tests/analyze/test_stage_counts.py
//! holds these counts against the macros' over every sample and both fixtures.

use super::rows::BioRow;
pub use crate::buckets::value_bucket;
use crate::hash::FastMap;

/// concepts.py `bio_stage_ns`: a bio's stage latencies in the order of the stage codes 1..7
/// (Q2G, G2I, I2D, Q2M, M2D, D2C, Q2C); None where the bio has no such stage. I2D (M2D) only
/// when the bio's D follows its I (M).
pub fn bio_stage_ns(b: &BioRow) -> [Option<i64>; 7] {
    let since = |later: Option<i64>, earlier: Option<i64>| Some(later? - earlier?);
    let after = |mark: Option<i64>| match (b.d_t, mark) {
        (Some(d), Some(m)) if d >= m => Some(d - m),
        _ => None,
    };
    [
        since(b.g_t, Some(b.q_t)),
        since(b.i_t, b.g_t),
        if b.merged { None } else { after(b.i_t) },
        since(b.m_t, Some(b.q_t)),
        if b.merged { after(b.m_t) } else { None },
        b.d2c,
        b.q2c(),
    ]
}

/// The Q2Q stage code; its latencies are the gaps, one per scope (codes 1..4).
const Q2Q: u8 = 8;

/// The latencies of one (group, scope, stage, value bucket).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    pub count: i64,
    pub lo: i64,
    pub hi: i64,
    pub total: i128,
}

/// (group key, scope, stage, value bucket): what a bucket's latencies share.
pub type BucketKey = (i64, u8, u8, i16);

/// The buckets, each found by one integer: a bio's group is looked up once (its index among
/// the groups met), and each of its latencies probes one table of packed keys.
#[derive(Default)]
pub struct StageCounts {
    /// Each reporting group met (the Q2Q file's group_key), by its index.
    groups: Vec<i64>,
    group_index: FastMap<i64, u32>,
    /// `packed` (group index, scope, stage, value bucket) -> its latencies.
    buckets: BucketTable,
}

/// A bucket's key as one integer: group index, scope, stage, value bucket (as 16 bits).
fn packed(group: u32, scope: u8, stage: u8, bucket: i16) -> u64 {
    (u64::from(group) << 32)
        | (u64::from(scope) << 24)
        | (u64::from(stage) << 16)
        | u64::from(bucket as u16)
}

/// A bucket and the packed key it is filed under (count 0: a free slot), in 40 bytes: its
/// sum as two words, so that no field asks for 16-byte alignment (a slot would take 64).
#[derive(Clone, Copy, Default)]
struct Slot {
    key: u64,
    count: i64,
    lo: i64,
    hi: i64,
    /// The sum's low and high 64 bits.
    total: [u64; 2],
}

impl Slot {
    fn total(&self) -> i128 {
        ((u128::from(self.total[1]) << 64) | u128::from(self.total[0])) as i128
    }

    fn bucket(&self) -> Bucket {
        Bucket {
            count: self.count,
            lo: self.lo,
            hi: self.hi,
            total: self.total(),
        }
    }
}

/// The buckets by packed key, in one open-addressed array (linear probing, never a removal,
/// at most 3/4 full): every written bio adds ~9 latencies, each one multiply and, nearly
/// always, a read of one or two neighbouring slots, where a general hash map hashes, matches
/// a control group and then reads the slot.
struct BucketTable {
    slots: Vec<Slot>,
    /// log2 of the slots.
    bits: u32,
    len: usize,
}

impl Default for BucketTable {
    fn default() -> Self {
        BucketTable::with_bits(10)
    }
}

impl BucketTable {
    fn with_bits(bits: u32) -> BucketTable {
        BucketTable {
            slots: vec![Slot::default(); 1 << bits],
            bits,
            len: 0,
        }
    }

    /// Where key is, or the free slot where it goes.
    #[inline(always)]
    fn find(&self, key: u64) -> usize {
        // Fibonacci hashing: the multiply spreads the packed fields into the top bits
        let mask = self.slots.len() - 1;
        let mut i = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.bits)) as usize;
        loop {
            // SAFETY: i is below 2^bits, the slots' length (the top bits of a product, then
            // masked by the length less one, a power of two)
            let slot = unsafe { self.slots.get_unchecked(i) };
            if slot.count == 0 || slot.key == key {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Count latency ns into key's bucket.
    #[inline(always)]
    fn add(&mut self, key: u64, ns: i64) {
        let i = self.find(key);
        // SAFETY: find gives an index below the slots' length
        let slot = unsafe { self.slots.get_unchecked_mut(i) };
        if slot.count == 0 {
            *slot = Slot {
                key,
                count: 1,
                lo: ns,
                hi: ns,
                total: [ns as u64, if ns < 0 { u64::MAX } else { 0 }],
            };
            self.len += 1;
            if 4 * self.len > 3 * self.slots.len() {
                self.grow();
            }
            return;
        }
        slot.count += 1;
        slot.lo = slot.lo.min(ns);
        slot.hi = slot.hi.max(ns);
        // the 128-bit sum, a word at a time: ns sign-extended, the low words' carry
        let (low, carry) = slot.total[0].overflowing_add(ns as u64);
        slot.total[0] = low;
        slot.total[1] = slot.total[1]
            .wrapping_add(if ns < 0 { u64::MAX } else { 0 })
            .wrapping_add(u64::from(carry));
    }

    /// Twice the slots, every bucket filed again.
    fn grow(&mut self) {
        let old = std::mem::replace(self, BucketTable::with_bits(self.bits + 1));
        for slot in old.slots.into_iter().filter(|s| s.count != 0) {
            let i = self.find(slot.key);
            self.slots[i] = slot;
        }
        self.len = old.len;
    }

    fn iter(&self) -> impl Iterator<Item = (u64, Bucket)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.count != 0)
            .map(|s| (s.key, s.bucket()))
    }
}

impl StageCounts {
    #[inline(always)]
    fn add(&mut self, key: u64, ns: i64) {
        self.buckets.add(key, ns);
    }

    /// Every bucket holding a latency, with its key.
    pub fn buckets(&self) -> impl Iterator<Item = (BucketKey, Bucket)> + '_ {
        self.buckets.iter().map(|(k, b)| {
            let group = self.groups[(k >> 32) as usize];
            (
                (group, (k >> 24) as u8, (k >> 16) as u8, k as u16 as i16),
                b,
            )
        })
    }

    /// The index of a reporting group (its `group_key`), given when its first bio is queued:
    /// the bio keeps it, so that counting its latencies looks nothing up.
    pub fn group(&mut self, group_key: i64) -> u32 {
        let groups = &mut self.groups;
        *self.group_index.entry(group_key).or_insert_with(|| {
            groups.push(group_key);
            (groups.len() - 1) as u32
        })
    }

    /// Count written bios' latencies (each in its group, `BioRow::group`): their stages at
    /// scope 0, their Q2Q gaps at theirs. Rows are counted a few chunks at a time as they
    /// are handed over (handover.rs), not one by one among the pass's other rules: the
    /// table's lines are then met again within one run of rows.
    pub fn count(&mut self, rows: &[BioRow]) {
        for b in rows {
            let group = b.group;
            let stages = bio_stage_ns(b);
            for (code, ns) in (1u8..).zip(stages.iter()) {
                if let &Some(ns) = ns {
                    self.add(packed(group, 0, code, value_bucket(ns) as i16), ns);
                }
            }
            for (scope, gap) in (1u8..).zip(b.q2q.iter()) {
                if let &Some(ns) = gap {
                    self.add(packed(group, scope, Q2Q, value_bucket(ns) as i16), ns);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::event::{Op, Remap};

    fn bio(merged: bool) -> BioRow {
        BioRow {
            dev: 0,
            op: Op::Write,
            rwbs: None,
            sector: Some(8),
            nsectors: Some(8),
            pid: 1,
            comm: None,
            q_t: 100,
            g_t: if merged { None } else { Some(110) },
            m_t: if merged { Some(105) } else { None },
            i_t: if merged { None } else { Some(130) },
            d_t: Some(160),
            c_t: Some(1_160),
            d2c: Some(1_000),
            merged,
            pieces: 1,
            requeues: None,
            partial: false,
            remap: Remap::default(),
            q_eid: 0,
            d_eid: Some(1),
            q2q: [Some(300), None, None, Some(300)],
            group: 0,
        }
    }

    #[test]
    fn a_bio_counts_each_stage_it_has_and_each_gap_at_its_scope() {
        let mut counts = StageCounts::default();
        let seven = counts.group(7);
        let minus_eight = counts.group(-8);
        assert_eq!((seven, minus_eight, counts.group(7)), (0, 1, 0));
        // a negative group key and a negative gap keep their signs through the packed key
        let back = BioRow {
            q2q: [Some(-300), None, None, None],
            group: minus_eight,
            ..bio(false)
        };
        counts.count(&[bio(false), bio(true), back]);
        let mut got: Vec<_> = counts
            .buckets()
            .filter(|&((g, scope, _, _), _)| g == 7 || scope == 1)
            .map(|((g, scope, stage, b), n)| {
                (g, scope, stage, i64::from(b), n.count, n.lo, n.hi, n.total)
            })
            .collect();
        got.sort_unstable();
        let bucket = value_bucket;
        assert_eq!(
            got,
            vec![
                (-8, 1, Q2Q, bucket(-300), 1, -300, -300, -300),
                (7, 0, 1, bucket(10), 1, 10, 10, 10), // Q2G, the unmerged bio
                (7, 0, 2, bucket(20), 1, 20, 20, 20), // G2I
                (7, 0, 3, bucket(30), 1, 30, 30, 30), // I2D: its D follows its I
                (7, 0, 4, bucket(5), 1, 5, 5, 5),     // Q2M, the merged bio
                (7, 0, 5, bucket(55), 1, 55, 55, 55), // M2D: its D follows its M
                (7, 0, 6, bucket(1_000), 2, 1_000, 1_000, 2_000), // D2C, both
                (7, 0, 7, bucket(1_060), 2, 1_060, 1_060, 2_120), // Q2C, both
                (7, 1, Q2Q, bucket(300), 2, 300, 300, 600), // the gaps at scopes 1 and 4
                (7, 4, Q2Q, bucket(300), 2, 300, 300, 600),
            ]
        );
    }

    #[test]
    fn the_bucket_table_keeps_every_key_as_it_grows() {
        let mut table = BucketTable::with_bits(2);
        let mut expected: std::collections::HashMap<u64, (i64, i64, i64, i128)> =
            Default::default();
        for i in 0..5_000u64 {
            // keys that differ only in high or only in low bits, each met several times
            let key = ((i % 700) << 32) | (i % 13) << 16 | (i % 3);
            let ns = (i as i64 * 7919) % 10_007 - 5_000;
            table.add(key, ns);
            let e = expected.entry(key).or_insert((0, i64::MAX, i64::MIN, 0));
            *e = (e.0 + 1, e.1.min(ns), e.2.max(ns), e.3 + i128::from(ns));
        }
        let got: std::collections::HashMap<u64, (i64, i64, i64, i128)> = table
            .iter()
            .map(|(k, b)| (k, (b.count, b.lo, b.hi, b.total)))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(table.len, expected.len());
        // sums beyond 64 bits, both ways
        let mut big = BucketTable::default();
        for ns in [i64::MAX, i64::MAX, i64::MAX, i64::MIN, -1] {
            big.add(7, ns);
        }
        let total = 3 * i128::from(i64::MAX) + i128::from(i64::MIN) - 1;
        assert_eq!(big.iter().next().map(|(_, b)| b.total), Some(total));
        for _ in 0..4 {
            big.add(7, i64::MIN);
        }
        let total = total + 4 * i128::from(i64::MIN);
        assert_eq!(big.iter().next().map(|(_, b)| b.total), Some(total));
    }

    #[test]
    fn buckets_are_the_value_below_256_then_its_top_8_bits() {
        assert_eq!(value_bucket(0), 0);
        assert_eq!(value_bucket(255), 255);
        assert_eq!(value_bucket(256), 512 + 128); // 9 bits: shift 1, top 8 bits 128
        assert_eq!(value_bucket(511), 512 + 255);
        assert_eq!(value_bucket(-1), -1); // -(0 + 1): mirrored below 0
        assert!(value_bucket(i64::MAX) < i64::from(i16::MAX));
        assert!(value_bucket(i64::MIN) > i64::from(i16::MIN));
        // ordered as the values are
        let values = [
            -70_000,
            -300,
            -1,
            0,
            1,
            255,
            256,
            511,
            512,
            4096,
            1 << 40,
            i64::MAX,
        ];
        let buckets: Vec<i64> = values.iter().map(|&v| value_bucket(v)).collect();
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
    }
}
