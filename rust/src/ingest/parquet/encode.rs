//! Parquet's value encodings that the events table uses: the RLE/bit-packed hybrid (definition
//! levels, dictionary indices), DELTA_BINARY_PACKED (integers that grow or stay put) and PLAIN.

/// Bits needed for `v` (0 for 0).
pub fn bit_width(v: u64) -> u8 {
    (64 - v.leading_zeros()) as u8
}

/// Append `values` packed `width` bits each, least significant bit first (how both the hybrid's
/// bit-packed runs and DELTA_BINARY_PACKED's miniblocks pack). Room is made once and the bytes
/// stored a 64-bit word at a time: a push per byte was the writer's hottest loop.
pub fn bit_pack(out: &mut Vec<u8>, values: impl IntoIterator<Item = u64>, width: u8) {
    if width == 0 {
        return;
    }
    let values = values.into_iter();
    let start = out.len();
    // room for the values the iterator promises, and a word of slack for each store
    out.resize(
        start + (values.size_hint().0 * usize::from(width)).div_ceil(8) + 8,
        0,
    );
    let (mut acc, mut bits, mut at): (u128, u32, usize) = (0, 0, start);
    for v in values {
        acc |= u128::from(v) << bits;
        bits += u32::from(width);
        if bits >= 64 {
            if at + 8 > out.len() {
                out.resize(at + 8, 0);
            }
            out[at..at + 8].copy_from_slice(&(acc as u64).to_le_bytes());
            at += 8;
            acc >>= 64;
            bits -= 64;
        }
    }
    let tail = bits.div_ceil(8) as usize;
    if at + tail > out.len() {
        out.resize(at + tail, 0);
    }
    out[at..at + tail].copy_from_slice(&(acc as u64).to_le_bytes()[..tail]);
    out.truncate(at + tail);
}

pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn zigzag(out: &mut Vec<u8>, v: i64) {
    varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// The RLE/bit-packed hybrid of `values` (each < 2^width), without a length prefix: a run of
/// 8 or more equal values starting a group of 8 is one RLE run, the rest go bit-packed 8 at a
/// time (the last group padded with zeros: the reader knows how many values there are).
pub fn hybrid(out: &mut Vec<u8>, values: &[u32], width: u8) {
    let value_bytes = usize::from(width).div_ceil(8);
    let mut literal_from = 0;
    let mut at = 0;
    let flush_literals = |out: &mut Vec<u8>, from: usize, to: usize| {
        if from == to {
            return;
        }
        let groups = (to - from).div_ceil(8);
        varint(out, ((groups as u64) << 1) | 1);
        if width <= 8 {
            byte_groups(out, &values[from..to], width);
            return;
        }
        let padding = std::iter::repeat_n(0, groups * 8 - (to - from));
        let literals = values[from..to].iter().map(|&v| u64::from(v));
        bit_pack(out, literals.chain(padding), width);
    };
    while at < values.len() {
        let v = values[at];
        let mut run = 1;
        while at + run < values.len() && values[at + run] == v {
            run += 1;
        }
        if run >= 8 {
            flush_literals(out, literal_from, at);
            varint(out, (run as u64) << 1);
            out.extend_from_slice(&v.to_le_bytes()[..value_bytes]);
            at += run;
            literal_from = at;
        } else {
            at = (at + 8).min(values.len());
        }
    }
    flush_literals(out, literal_from, values.len());
}

/// `values` bit-packed at a `width` of at most 8, eight at a time: eight values fill `width`
/// bytes exactly, packed in one word (bit_pack's word per value was the dictionary columns'
/// hottest loop). The last group is padded with zeros, as bit_pack pads it.
fn byte_groups(out: &mut Vec<u8>, values: &[u32], width: u8) {
    debug_assert!((1..=8).contains(&width));
    let bytes = usize::from(width);
    let pack = |group: &[u32]| {
        let word = group
            .iter()
            .enumerate()
            .fold(0u64, |word, (k, &v)| word | u64::from(v) << (k * bytes));
        word.to_le_bytes()
    };
    let mut groups = values.chunks_exact(8);
    for group in &mut groups {
        out.extend_from_slice(&pack(group)[..bytes]);
    }
    let rest = groups.remainder();
    if !rest.is_empty() {
        out.extend_from_slice(&pack(rest)[..bytes]);
    }
}

/// One value repeated `count` times as the hybrid (an RLE run).
pub fn hybrid_run(out: &mut Vec<u8>, value: u32, count: usize, width: u8) {
    if count == 0 {
        return;
    }
    varint(out, (count as u64) << 1);
    out.extend_from_slice(&value.to_le_bytes()[..usize::from(width).div_ceil(8)]);
}

/// An integer type DELTA_BINARY_PACKED encodes: its deltas wrap at its own width (a reader of
/// INT32 takes at most 32 bits per delta).
pub trait DeltaInt: Copy {
    fn as_i64(self) -> i64;
    /// self - before, wrapped at the type's width.
    fn delta(self, before: Self) -> i64;
    /// (a - b) wrapped at the type's width, as an unsigned number of that width.
    fn offset(a: i64, b: i64) -> u64;
}

impl DeltaInt for i32 {
    fn as_i64(self) -> i64 {
        i64::from(self)
    }
    fn delta(self, before: i32) -> i64 {
        i64::from(self.wrapping_sub(before))
    }
    fn offset(a: i64, b: i64) -> u64 {
        u64::from((a as i32).wrapping_sub(b as i32) as u32)
    }
}

impl DeltaInt for i64 {
    fn as_i64(self) -> i64 {
        self
    }
    fn delta(self, before: i64) -> i64 {
        self.wrapping_sub(before)
    }
    fn offset(a: i64, b: i64) -> u64 {
        a.wrapping_sub(b) as u64
    }
}

const DELTA_BLOCK: usize = 128;
const MINIBLOCKS: usize = 4;
const MINIBLOCK: usize = DELTA_BLOCK / MINIBLOCKS;

/// DELTA_BINARY_PACKED: blocks of 128 deltas in 4 miniblocks of 32, each block's deltas less
/// their minimum, each miniblock packed at the width its largest needs.
pub fn delta_binary_packed<T: DeltaInt>(out: &mut Vec<u8>, values: &[T]) {
    delta_header(out, values);
    if !steady_blocks(out, values) {
        packed_blocks(out, values);
    }
}

/// The header: block size, miniblocks per block, how many values, the first value.
fn delta_header<T: DeltaInt>(out: &mut Vec<u8>, values: &[T]) {
    varint(out, DELTA_BLOCK as u64);
    varint(out, MINIBLOCKS as u64);
    varint(out, values.len() as u64);
    zigzag(out, values.first().map_or(0, |v| v.as_i64()));
}

/// The blocks of any values: each miniblock packed at the width its largest delta needs.
fn packed_blocks<T: DeltaInt>(out: &mut Vec<u8>, values: &[T]) {
    // the deltas a block at a time, on the stack: no copy of the column as deltas
    let mut deltas = [0i64; DELTA_BLOCK];
    let mut packed = [0u64; MINIBLOCK];
    let mut from = 1;
    while from < values.len() {
        let n = (values.len() - from).min(DELTA_BLOCK);
        for (d, w) in deltas.iter_mut().zip(values[from - 1..from + n].windows(2)) {
            *d = w[1].delta(w[0]);
        }
        from += n;
        let block = &deltas[..n];
        let min = smallest(block);
        zigzag(out, min);
        let widths_at = out.len();
        out.resize(widths_at + MINIBLOCKS, 0);
        for (k, mini) in block.chunks(MINIBLOCK).enumerate() {
            packed.fill(0);
            for (p, &d) in packed.iter_mut().zip(mini) {
                *p = T::offset(d, min);
            }
            let width = bit_width(packed.iter().fold(0, |a, &b| a | b));
            out[widths_at + k] = width;
            pack_miniblock(out, &packed, width);
        }
    }
}

/// The smallest of a block's deltas (at least one), in four lanes: four chains of compares
/// the CPU runs side by side, where one chain waits on each compare before the next.
fn smallest(block: &[i64]) -> i64 {
    let mut lanes = [i64::MAX; 4];
    let mut quads = block.chunks_exact(4);
    for quad in &mut quads {
        for (lane, &d) in lanes.iter_mut().zip(quad) {
            *lane = (*lane).min(d);
        }
    }
    let rest = quads.remainder().iter().copied();
    lanes.into_iter().chain(rest).min().expect("four lanes")
}

/// A miniblock's values (each below 2^width) packed as bit_pack packs them: 4 x width bytes.
/// One loop per width, so that every shift is a constant and no value needs a 128-bit word.
fn pack_miniblock(out: &mut Vec<u8>, values: &[u64; MINIBLOCK], width: u8) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                0 => {}
                $($w => pack_at::<$w>(out, values),)*
                _ => bit_pack(out, values.iter().copied(), width),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
              31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57
              58 59 60 61 62 63 64);
}

#[inline(always)]
fn pack_at<const W: u32>(out: &mut Vec<u8>, values: &[u64; MINIBLOCK]) {
    let start = out.len();
    out.resize(start + MINIBLOCK * W as usize / 8, 0);
    let bytes = &mut out[start..];
    let (mut word, mut bits, mut at) = (0u64, 0u32, 0);
    for &v in values {
        word |= v << bits;
        if bits + W < 64 {
            bits += W;
            continue;
        }
        bytes[at..at + 8].copy_from_slice(&word.to_le_bytes());
        at += 8;
        // the value's bits that did not fit start the next word
        word = v.checked_shr(64 - bits).unwrap_or(0);
        bits = bits + W - 64;
    }
    // 32 values of an odd width end half way through a word
    let tail = (bits / 8) as usize;
    bytes[at..at + tail].copy_from_slice(&word.to_le_bytes()[..tail]);
}

/// The blocks of values that all step by one delta (a device, an input, a count by one), as
/// the general loop writes them: each block's minimum is that delta and every miniblock's
/// width 0. False, with nothing written, when the steps differ.
fn steady_blocks<T: DeltaInt>(out: &mut Vec<u8>, values: &[T]) -> bool {
    let Some(step) = values.get(1).map(|v| v.delta(values[0])) else {
        return false;
    };
    if !values.windows(2).all(|w| w[1].delta(w[0]) == step) {
        return false;
    }
    for _ in 0..(values.len() - 1).div_ceil(DELTA_BLOCK) {
        zigzag(out, step);
        out.extend_from_slice(&[0; MINIBLOCKS]);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miniblock_packs_as_bit_pack_packs_at_every_width() {
        for width in 0..=64u8 {
            let top = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let mut values = [0u64; MINIBLOCK];
            for (k, v) in values.iter_mut().enumerate() {
                *v = (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) & top;
            }
            values[3] = top;
            let (mut ours, mut theirs) = (vec![9u8], vec![9u8]);
            pack_miniblock(&mut ours, &values, width);
            bit_pack(&mut theirs, values.iter().copied(), width);
            assert_eq!(ours, theirs, "width {width}");
            assert_eq!(ours.len(), 1 + 4 * usize::from(width));
        }
    }

    #[test]
    fn bits_pack_low_bit_first() {
        let mut out = Vec::new();
        bit_pack(&mut out, [0, 1, 2, 3, 4, 5, 6, 7], 3);
        // the example of the Parquet spec's RLE section
        assert_eq!(out, vec![0b1000_1000, 0b1100_0110, 0b1111_1010]);
    }

    #[test]
    fn a_long_run_is_one_rle_run_and_the_rest_is_packed() {
        let mut values = vec![1u32; 20];
        values.extend([0, 1, 0]);
        let mut out = Vec::new();
        hybrid(&mut out, &values, 1);
        assert_eq!(out, vec![40, 1, 0b11, 0b0000_0010]);
    }

    #[test]
    fn byte_groups_pack_as_bit_pack_packs() {
        let mut seed = 0x9E37_79B9u64;
        for width in 1..=8u8 {
            for len in [1usize, 7, 8, 9, 16, 17, 100] {
                let values: Vec<u32> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        (seed as u32) & ((1u32 << width) - 1)
                    })
                    .collect();
                let mut grouped = Vec::new();
                byte_groups(&mut grouped, &values, width);
                let padded = values.len().div_ceil(8) * 8;
                let mut packed = Vec::new();
                let values64 = values.iter().map(|&v| u64::from(v));
                bit_pack(
                    &mut packed,
                    values64.chain(std::iter::repeat_n(0, padded - len)),
                    width,
                );
                assert_eq!(grouped, packed, "{len} values of width {width}");
            }
        }
    }

    #[test]
    fn deltas_of_a_steady_count_need_no_bits() {
        let mut out = Vec::new();
        delta_binary_packed(&mut out, &[5i64, 6, 7, 8]);
        // header 128, 4, 4 values, first 5 (zigzag 10); block: min 1 (zigzag 2), widths 0
        assert_eq!(out, vec![0x80, 0x01, 4, 4, 10, 2, 0, 0, 0, 0]);
    }

    #[test]
    fn deltas_of_any_width_read_back() {
        let mut seed = 88172645463325252u64;
        for len in [0usize, 1, 2, 31, 33, 128, 129, 300, 1000] {
            let values: Vec<i64> = (0..len)
                .map(|k| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    // steady runs, small noise and now and then any 64-bit value
                    match k % 97 {
                        0 => seed as i64,
                        1..=40 => k as i64,
                        _ => (seed % 1000) as i64,
                    }
                })
                .collect();
            let mut out = Vec::new();
            delta_binary_packed(&mut out, &values);
            let mut back: Vec<i64> = Vec::new();
            super::super::decode::delta_binary_packed(&out, &mut back).unwrap();
            assert_eq!(back, values, "{len} values");
        }
    }

    #[test]
    fn steady_values_are_packed_as_the_general_loop_packs_them() {
        for len in [2usize, 3, 33, 128, 129, 257, 1000] {
            for step in [0i64, 1, -3, i64::MAX] {
                let values: Vec<i64> = (0..len as i64).map(|k| k.wrapping_mul(step)).collect();
                let mut steady = Vec::new();
                delta_binary_packed(&mut steady, &values);
                let mut general = Vec::new();
                delta_header(&mut general, &values);
                packed_blocks(&mut general, &values);
                assert_eq!(steady, general, "{len} values stepping by {step}");
                let mut back: Vec<i64> = Vec::new();
                super::super::decode::delta_binary_packed(&steady, &mut back).unwrap();
                assert_eq!(back, values);
            }
        }
        // steps of one that wrap at 32 bits are steady too
        let wrapping = [i32::MAX - 1, i32::MAX, i32::MIN];
        let mut out = Vec::new();
        delta_binary_packed(&mut out, &wrapping);
        let mut back: Vec<i32> = Vec::new();
        super::super::decode::delta_binary_packed(&out, &mut back).unwrap();
        assert_eq!(back, wrapping);
    }

    #[test]
    fn int32_deltas_wrap_at_32_bits() {
        let mut out = Vec::new();
        delta_binary_packed(&mut out, &[i32::MIN, i32::MAX]);
        // the first value takes 5 bytes; one delta, -1 in 32 bits: min -1, offset 0
        assert_eq!(&out[9..], &[1, 0, 0, 0, 0]);
    }
}
