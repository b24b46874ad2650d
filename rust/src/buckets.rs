//! The value buckets of exact percentiles: the SQL macro `value_bucket`
//! (src/blkscope/analyze/sql/macros/buckets.sql), its definition, computed the same way. The
//! pass counts bios per bucket (pass::stages) and the statistics pick ranks in them
//! (stats::picks): one definition for both.

/// The number of bits of x >= 0 (0 for 0): the SQL macro `bit_width`.
fn bit_width(x: i64) -> i64 {
    64 - i64::from(x.leading_zeros())
}

/// A value's bucket, ordered as the values are: the value itself below 256, then its top 8
/// bits with the shift that keeps them; negative values mirrored below 0 (`value_bucket`).
pub fn value_bucket(v: i64) -> i64 {
    let sign = v >> 63; // -1 for a negative value, else 0
    let x = v ^ sign;
    let shift = bit_width(x >> 8);
    (shift * 512 + (x >> shift)) ^ sign
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_their_own_bucket() {
        assert_eq!(value_bucket(0), 0);
        assert_eq!(value_bucket(255), 255);
    }

    #[test]
    fn larger_values_keep_their_top_eight_bits() {
        assert_eq!(value_bucket(256), 512 + 128);
        assert_eq!(value_bucket(511), 512 + 255);
        assert_eq!(value_bucket(512), 1024 + 128);
    }

    #[test]
    fn negative_values_mirror_below_zero() {
        assert_eq!(value_bucket(-1), -1);
        assert_eq!(value_bucket(-257), -(512 + 128) - 1);
        assert_eq!(value_bucket(i64::MIN), !value_bucket(i64::MAX));
    }

    #[test]
    fn buckets_are_ordered_as_the_values() {
        let values = [-70_000, -300, -1, 0, 1, 255, 256, 1000, 70_000, 1 << 40];
        let buckets: Vec<i64> = values.iter().map(|&v| value_bucket(v)).collect();
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]));
    }
}
