//! A hash for the statistics' small integer keys (cells, groups, buckets): std's SipHash
//! guards against keys chosen by an attacker, which these are not, at several times the cost.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A HashMap keyed by small integers, with `IntHasher`.
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// Each integer of a key rotated in, xor-ed and multiplied; `finish` folds the high bits down
/// (hashbrown picks the bucket from the low bits).
#[derive(Default)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }

    fn write_i32(&mut self, x: i32) {
        self.write_u64(x as u32 as u64);
    }

    fn write_i64(&mut self, x: i64) {
        self.write_u64(x as u64);
    }

    fn write_u8(&mut self, x: u8) {
        self.write_u64(u64::from(x));
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_differ_in_one_field_stay_apart() {
        let mut map: FastMap<(i32, u8, i64), usize> = FastMap::default();
        for i in 0..10_000 {
            map.insert((i % 7, (i % 2) as u8, i64::from(i) * 512), i as usize);
        }
        assert_eq!(map.len(), 10_000);
        assert_eq!(map[&(3, 1, 3 * 512)], 3);
    }
}
