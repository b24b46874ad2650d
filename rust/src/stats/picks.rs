//! stage_stats' exact percentiles (sql/_stage_stats_build.sql): the latencies at the wanted
//! ranks. DuckDB knows from the pass's bucket counts (`_stage_buckets`) which value bucket of
//! each (level, group, stage) holds each wanted rank, and the rank's offset among that bucket's
//! latencies; here every bio's latencies are read once, those falling in a wanted bucket are
//! kept, and each offset is picked from them. Nothing else of a bio is kept, and no bio is
//! unrolled into one row per stage.

use super::hash::FastMap;
use crate::buckets::value_bucket;

/// The reporting levels of `_bio_group_levels`, by code: 1 process, 2 class, 3 op, 4 device.
pub const LEVELS: usize = 4;

/// The Q2Q stage code; its latencies are the gaps, each counted at its own scope's level only.
pub const Q2Q: u8 = 8;

/// The stage codes of `bio_stage_ns`' latencies, in its order (the SQL `bio_stage_codes()`).
pub const BIO_STAGES: [u8; 7] = [1, 2, 3, 4, 5, 6, 7];

/// A bio's stage times, as `bios` (and the pass's Q2Q file) has them.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    pub g_time_ns: Option<i64>,
    pub i_time_ns: Option<i64>,
    pub d_time_ns: Option<i64>,
    pub m_time_ns: Option<i64>,
    pub merged: Option<bool>,
    pub q_time_ns: Option<i64>,
    pub d2c_ns: Option<i64>,
    pub q2c_ns: Option<i64>,
}

/// The SQL macro `bio_stage_ns` (sql/macros/stages.sql), its definition, computed the same way:
/// a bio's latencies in BIO_STAGES order (Q2G, G2I, I2D, Q2M, M2D, D2C, Q2C), None where it has
/// no such stage (SQL's null: a null operand, or a CASE without its condition). I2D (M2D) only
/// for an unmerged (merged) bio whose D follows its I (M).
pub fn bio_stage_ns(t: &StageTimes) -> [Option<i64>; 7] {
    let since = |later: Option<i64>, earlier: Option<i64>| Some(later? - earlier?);
    let after = |wanted: bool, mark: Option<i64>| match (t.merged, t.d_time_ns, mark) {
        (Some(merged), Some(d), Some(m)) if merged == wanted && d >= m => Some(d - m),
        _ => None,
    };
    [
        since(t.g_time_ns, t.q_time_ns),
        since(t.i_time_ns, t.g_time_ns),
        after(false, t.i_time_ns),
        since(t.m_time_ns, t.q_time_ns),
        after(true, t.m_time_ns),
        t.d2c_ns,
        t.q2c_ns,
    ]
}

/// The latencies of one (level, group, stage) in one value bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BucketKey {
    pub level: u8,
    pub id: i32,
    pub stage: u8,
    pub b: i16,
}

/// A wanted rank: the offset-th smallest latency (0-based) of a bucket, for one percentile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub key: BucketKey,
    pub offset: i64,
    pub permille: i32,
}

/// The latencies of every wanted bucket, kept as the bios go by.
#[derive(Debug)]
pub struct Picker {
    /// per group key of the pass: the group's id at each level (gid, cid, oid, did)
    ids: FastMap<i64, [i32; LEVELS]>,
    /// per (stage, value bucket): the wanted buckets with them
    wanted: FastMap<(u8, i16), Vec<usize>>,
    /// per stage code and value bucket: whether any wanted bucket has them, a bit each (bit
    /// stage * 2^16 + b + 2^15): most latencies are in no wanted bucket, and this says so
    /// before any lookup
    seen: Vec<u64>,
    keys: Vec<BucketKey>,
    kept: Vec<Vec<i64>>,
    hits: Vec<(usize, Hit)>,
}

const BITS: usize = 1 << 16;

/// The word and mask of (stage, b)'s bit in `Picker::seen` (stage <= Q2Q).
#[inline(always)]
fn bit(stage: u8, b: i16) -> (usize, u64) {
    let i = usize::from(stage) * BITS + (i32::from(b) + (1 << 15)) as usize;
    (i / 64, 1u64 << (i % 64))
}

impl Picker {
    /// A picker for these hits; groups: (group key, [gid, cid, oid, did]) of every finest
    /// group.
    pub fn new(hits: &[Hit], groups: &[(i64, [i32; LEVELS])]) -> Picker {
        let mut picker = Picker {
            ids: groups.iter().copied().collect(),
            wanted: FastMap::default(),
            seen: vec![0; (usize::from(Q2Q) + 1) * BITS / 64],
            keys: Vec::new(),
            kept: Vec::new(),
            hits: Vec::new(),
        };
        let mut slots: FastMap<(u8, i32, u8, i16), usize> = FastMap::default();
        for hit in hits {
            let k = hit.key;
            let slot = *slots
                .entry((k.level, k.id, k.stage, k.b))
                .or_insert_with(|| {
                    picker.keys.push(hit.key);
                    picker.kept.push(Vec::new());
                    picker.keys.len() - 1
                });
            picker.hits.push((slot, *hit));
        }
        for (slot, key) in picker.keys.iter().enumerate() {
            picker
                .wanted
                .entry((key.stage, key.b))
                .or_default()
                .push(slot);
            if key.stage <= Q2Q {
                let (word, mask) = bit(key.stage, key.b);
                picker.seen[word] |= mask;
            }
        }
        picker
    }

    /// One latency of a bio whose groups are `at` (gid, cid, oid, did), counted at the levels
    /// `levels` (a mask, bit l-1 for level l): kept by each wanted bucket of those levels that
    /// holds it.
    #[inline(always)]
    fn offer(&mut self, at: &[i32; LEVELS], stage: u8, ns: i64, levels: u8) {
        let Ok(b) = i16::try_from(value_bucket(ns)) else {
            return;
        };
        let (word, mask) = bit(stage, b);
        if self.seen[word] & mask == 0 {
            return;
        }
        self.keep(at, stage, b, ns, levels);
    }

    /// offer's rare case, out of its way: a latency in a value bucket some wanted bucket has.
    #[inline(never)]
    fn keep(&mut self, at: &[i32; LEVELS], stage: u8, b: i16, ns: i64, levels: u8) {
        let Some(slots) = self.wanted.get(&(stage, b)) else {
            return;
        };
        for &slot in slots {
            let key = self.keys[slot];
            let level = usize::from(key.level);
            if (1..=LEVELS).contains(&level)
                && levels & (1 << (level - 1)) != 0
                && at[level - 1] == key.id
            {
                self.kept[slot].push(ns);
            }
        }
    }

    /// One bio of the group `group_key`: its stage latencies (bio_stage_ns) count at every
    /// level, its Q2Q gaps (scopes 1..4 in order) each at its own scope's level only. A bio of
    /// a group the picker was not given counts nowhere.
    pub fn add_bio(&mut self, group_key: i64, times: &StageTimes, gaps: [Option<i64>; LEVELS]) {
        let Some(at) = self.ids.get(&group_key).copied() else {
            return;
        };
        for (code, ns) in BIO_STAGES.iter().zip(bio_stage_ns(times)) {
            if let Some(ns) = ns {
                self.offer(&at, *code, ns, 0b1111);
            }
        }
        for (scope, gap) in gaps.into_iter().enumerate() {
            if let Some(ns) = gap {
                self.offer(&at, Q2Q, ns, 1 << scope);
            }
        }
    }

    /// Each hit with the latency at its rank; Err names a hit whose bucket holds fewer
    /// latencies than its offset (the counts and the latencies disagree: a bug).
    pub fn picks(mut self) -> Result<Vec<(Hit, i64)>, String> {
        for kept in &mut self.kept {
            kept.sort_unstable();
        }
        self.hits
            .iter()
            .map(|&(slot, hit)| {
                let kept = &self.kept[slot];
                usize::try_from(hit.offset)
                    .ok()
                    .and_then(|o| kept.get(o))
                    .map(|&v| (hit, v))
                    .ok_or_else(|| {
                        format!(
                            "stage_stats: bucket {:?} holds {} latencies, none at offset {}",
                            hit.key,
                            kept.len(),
                            hit.offset
                        )
                    })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(level: u8, id: i32, stage: u8, b: i16) -> BucketKey {
        BucketKey {
            level,
            id,
            stage,
            b,
        }
    }

    fn hit(key: BucketKey, offset: i64, permille: i32) -> Hit {
        Hit {
            key,
            offset,
            permille,
        }
    }

    /// group keys 101 and 102 (gid 1 and 2) share class 10, op 20 and device 30.
    fn groups() -> Vec<(i64, [i32; LEVELS])> {
        vec![(101, [1, 10, 20, 30]), (102, [2, 10, 20, 30])]
    }

    fn d2c(ns: i64) -> StageTimes {
        StageTimes {
            d2c_ns: Some(ns),
            ..StageTimes::default()
        }
    }

    fn q2g(ns: i64) -> StageTimes {
        StageTimes {
            q_time_ns: Some(100),
            g_time_ns: Some(100 + ns),
            ..StageTimes::default()
        }
    }

    const NO_GAPS: [Option<i64>; LEVELS] = [None; LEVELS];

    #[test]
    fn the_offset_picks_among_the_buckets_latencies_in_order() {
        let b = value_bucket(1000) as i16;
        let wanted = key(4, 30, 6, b);
        let mut p = Picker::new(&[hit(wanted, 0, 500), hit(wanted, 2, 900)], &groups());
        for ns in [1003, 1000, 1001, 5000] {
            p.add_bio(101, &d2c(ns), NO_GAPS);
        }
        let got = p.picks().unwrap();
        assert_eq!(
            got,
            vec![(hit(wanted, 0, 500), 1000), (hit(wanted, 2, 900), 1003)]
        );
    }

    #[test]
    fn a_stage_latency_counts_at_the_coarser_levels_of_its_group() {
        let b = value_bucket(7) as i16;
        let class = key(2, 10, 1, b);
        let other_process = key(1, 2, 1, b);
        let mut p = Picker::new(&[hit(class, 1, 500), hit(other_process, 0, 500)], &groups());
        p.add_bio(101, &q2g(7), NO_GAPS);
        p.add_bio(102, &q2g(7), NO_GAPS);
        let got = p.picks().unwrap();
        assert_eq!(got[0].1, 7);
        assert_eq!(got[1].1, 7);
    }

    #[test]
    fn a_gap_counts_only_at_its_scopes_level() {
        let b = value_bucket(50) as i16;
        let op = key(3, 20, Q2Q, b);
        let mut p = Picker::new(&[hit(op, 0, 500)], &groups());
        // 51 measured between one process's Qs: not an op gap
        p.add_bio(
            101,
            &StageTimes::default(),
            [Some(51), None, Some(50), None],
        );
        assert_eq!(p.picks().unwrap()[0].1, 50);
    }

    #[test]
    fn a_rank_beyond_the_buckets_latencies_is_an_error() {
        let wanted = key(4, 30, 6, 3);
        let p = Picker::new(&[hit(wanted, 1, 500)], &groups());
        assert!(p.picks().unwrap_err().contains("none at offset 1"));
    }

    #[test]
    fn latencies_of_unwanted_buckets_are_not_kept() {
        let wanted = key(4, 30, 6, value_bucket(1000) as i16);
        let mut p = Picker::new(&[hit(wanted, 0, 500)], &groups());
        p.add_bio(101, &d2c(90_000), NO_GAPS);
        p.add_bio(999, &d2c(1000), NO_GAPS); // a group it was not given
        assert!(p.kept.iter().all(|k| k.is_empty()));
    }

    #[test]
    fn stage_latencies_follow_the_macro() {
        let t = StageTimes {
            q_time_ns: Some(0),
            g_time_ns: Some(2),
            i_time_ns: Some(5),
            d_time_ns: Some(9),
            m_time_ns: None,
            merged: Some(false),
            d2c_ns: Some(4),
            q2c_ns: Some(13),
        };
        let ns = bio_stage_ns(&t);
        assert_eq!(
            ns,
            [Some(2), Some(3), Some(4), None, None, Some(4), Some(13)]
        );
    }

    #[test]
    fn i2d_and_m2d_need_the_d_after_the_mark_and_the_merged_flag() {
        let merged = StageTimes {
            q_time_ns: Some(0),
            m_time_ns: Some(3),
            d_time_ns: Some(10),
            i_time_ns: Some(1),
            merged: Some(true),
            ..StageTimes::default()
        };
        assert_eq!(bio_stage_ns(&merged)[2..5], [None, Some(3), Some(7)]);
        let d_first = StageTimes {
            i_time_ns: Some(12),
            merged: Some(false),
            ..merged
        };
        assert_eq!(bio_stage_ns(&d_first)[2], None);
        let unknown = StageTimes {
            merged: None,
            ..merged
        };
        assert_eq!(bio_stage_ns(&unknown)[2..5], [None, Some(3), None]);
    }
}
