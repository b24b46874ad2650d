//! The hash maps of the pass and of ingest's audit: std's `HashMap` with a multiply-and-fold
//! hasher. The keys are a few small integers (a device index, a sector, a pid, a CPU);
//! SipHash, std's default, guards against keys chosen by an attacker, which a trace's numbers
//! are not, and costs several times more.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by small integer keys.
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// Combines each integer of a key with a rotate, an xor and a multiply; `finish` folds the
/// high bits down, because hashbrown picks the bucket from the low bits and sectors step by 8.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

const K: u64 = 0x9E37_79B9_7F4A_7C15;

impl FastHasher {
    #[inline]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.add(v as u64);
    }
    #[inline]
    fn write_u16(&mut self, v: u16) {
        self.add(v as u64);
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.add(v as u64);
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    #[inline]
    fn write_i64(&mut self, v: i64) {
        self.add(v as u64);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        let x = self.0;
        x ^ (x >> 29) ^ (x >> 47)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::{BuildHasher, Hash};

    fn low_bits(key: impl Hash) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(key) & 1023
    }

    #[test]
    fn sectors_a_page_apart_spread_over_the_low_bits() {
        // hashbrown's bucket is the hash's low bits: keys that differ only above them (sectors
        // 8 apart on one device) must not share a few buckets
        let buckets: HashSet<u64> = (0..1024i64).map(|s| low_bits((0u32, 8 * s))).collect();
        assert!(buckets.len() > 600, "{} buckets of 1024", buckets.len());
    }

    #[test]
    fn a_map_keeps_what_is_put_in_it() {
        let mut map: FastMap<(u32, i64), usize> = FastMap::default();
        for s in 0..10_000 {
            map.insert((s as u32 % 3, 8 * s), s as usize);
        }
        assert_eq!(map.len(), 10_000);
        assert_eq!(map[&(1, 8 * 4)], 4);
    }
}
