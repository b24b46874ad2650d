//! The value encodings the writer uses (encode.rs), read back: the RLE/bit-packed hybrid,
//! DELTA_BINARY_PACKED, PLAIN integers, booleans and byte arrays.

/// What a page's bytes cannot be: cut short, or a count or width out of range.
#[derive(Debug)]
pub struct Truncated;

fn varint(bytes: &[u8], at: &mut usize) -> Result<u64, Truncated> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at).ok_or(Truncated)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(Truncated)
}

fn zigzag(bytes: &[u8], at: &mut usize) -> Result<i64, Truncated> {
    let v = varint(bytes, at)?;
    Ok((v >> 1) as i64 ^ -((v & 1) as i64))
}

/// `count` values of `width` bits each (at most 64), least significant bit first, from the
/// start of `bytes`, each handed to `put`: a value is one unaligned 64-bit load and a shift
/// while 8 bytes remain under it, then bit by bit.
#[inline(always)]
fn unpack(
    bytes: &[u8],
    width: u8,
    count: usize,
    mut put: impl FnMut(u64),
) -> Result<(), Truncated> {
    let w = usize::from(width);
    if w > 64 || bytes.len() * 8 < count * w {
        return Err(Truncated);
    }
    if w == 0 {
        (0..count).for_each(|_| put(0));
        return Ok(());
    }
    let mut i = 0;
    if w <= 56 {
        let mask = (1u64 << w) - 1;
        while i < count {
            let bit = i * w;
            let Some(window) = bytes.get(bit >> 3..(bit >> 3) + 8) else {
                break;
            };
            let word = u64::from_le_bytes(window.try_into().expect("8 bytes"));
            put((word >> (bit & 7)) & mask);
            i += 1;
        }
    }
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    for k in i..count {
        let bit = k * w;
        let mut v: u128 = 0;
        for (j, &b) in bytes[bit >> 3..].iter().take(9).enumerate() {
            v |= u128::from(b) << (8 * j);
        }
        put((v >> (bit & 7)) as u64 & mask);
    }
    Ok(())
}

/// Values of at most 32 bits packed in groups of 8 (each group `width` bytes) into `out`
/// (whose length says how many); the caller checked there are enough bytes.
fn unpack_groups(packed: &[u8], width: u8, out: &mut [u32]) {
    let w = usize::from(width);
    if w == 0 {
        out.fill(0);
        return;
    }
    let mask = if w == 32 {
        u64::from(u32::MAX)
    } else {
        (1u64 << w) - 1
    };
    if w <= 8 {
        // a group is at most 8 bytes: one word, loaded whole while 8 bytes remain (the bytes
        // past the group are shifted out of every value)
        for (g, values) in out.chunks_mut(8).enumerate() {
            let at = g * w;
            let word = match packed.get(at..at + 8) {
                Some(eight) => u64::from_le_bytes(eight.try_into().expect("8 bytes")),
                None => {
                    let mut last = [0u8; 8];
                    let group = &packed[at.min(packed.len())..];
                    let n = group.len().min(8);
                    last[..n].copy_from_slice(&group[..n]);
                    u64::from_le_bytes(last)
                }
            };
            for (j, v) in values.iter_mut().enumerate() {
                *v = ((word >> (j * w)) & mask) as u32;
            }
        }
        return;
    }
    for (group, values) in packed.chunks(w).zip(out.chunks_mut(8)) {
        let mut window = [0u8; 40];
        window[..group.len()].copy_from_slice(group);
        for (j, v) in values.iter_mut().enumerate() {
            let bit = j * w;
            let word = u64::from_le_bytes(window[bit >> 3..(bit >> 3) + 8].try_into().expect("8"));
            *v = ((word >> (bit & 7)) & mask) as u32;
        }
    }
}

/// Definition levels (width 1) appended to `valid` as bits, straight from the hybrid's runs
/// (a bit-packed run already is Arrow's bitmap); the rows with a value, and the bytes read.
pub fn levels(
    bytes: &[u8],
    count: usize,
    valid: &mut arrow_buffer::BooleanBufferBuilder,
) -> Result<(usize, usize), Truncated> {
    let (mut at, mut left, mut present) = (0, count, 0);
    while left > 0 {
        let header = varint(bytes, &mut at)?;
        let n = usize::try_from(header >> 1).map_err(|_| Truncated)?;
        if header & 1 == 1 {
            let packed = bytes.get(at..at + n).ok_or(Truncated)?;
            let m = (n * 8).min(left);
            valid.append_packed_range(0..m, packed);
            present += packed[..m / 8]
                .iter()
                .map(|b| b.count_ones() as usize)
                .sum::<usize>();
            if m % 8 != 0 {
                present += (packed[m / 8] & ((1u8 << (m % 8)) - 1)).count_ones() as usize;
            }
            at += n;
            left -= m;
        } else {
            let run = n.min(left);
            let v = *bytes.get(at).ok_or(Truncated)? & 1 == 1;
            at += 1;
            valid.append_n(run, v);
            present += if v { run } else { 0 };
            left -= run;
        }
    }
    Ok((present, at))
}

/// `count` PLAIN booleans (a bit each, as Arrow's bitmap) appended to `out`.
pub fn plain_booleans(
    bytes: &[u8],
    count: usize,
    out: &mut arrow_buffer::BooleanBufferBuilder,
) -> Result<(), Truncated> {
    out.append_packed_range(0..count, bytes.get(..count.div_ceil(8)).ok_or(Truncated)?);
    Ok(())
}

/// `count` values of the RLE/bit-packed hybrid at `width` bits appended to `out`; the bytes
/// read.
pub fn hybrid(
    bytes: &[u8],
    width: u8,
    count: usize,
    out: &mut Vec<u32>,
) -> Result<usize, Truncated> {
    if width > 32 {
        return Err(Truncated);
    }
    let value_bytes = usize::from(width).div_ceil(8);
    let mut at = 0;
    let mut left = count;
    out.reserve(count);
    while left > 0 {
        let header = varint(bytes, &mut at)?;
        if header & 1 == 1 {
            let groups = usize::try_from(header >> 1).map_err(|_| Truncated)?;
            let len = groups.checked_mul(usize::from(width)).ok_or(Truncated)?;
            let end = at.checked_add(len).ok_or(Truncated)?;
            let packed = bytes.get(at..end).ok_or(Truncated)?;
            let n = (groups * 8).min(left);
            let from = out.len();
            out.resize(from + n, 0);
            unpack_groups(packed, width, &mut out[from..]);
            at = end;
            left -= n;
        } else {
            let run = usize::try_from(header >> 1)
                .map_err(|_| Truncated)?
                .min(left);
            let raw = bytes.get(at..at + value_bytes).ok_or(Truncated)?;
            let mut word = [0u8; 4];
            word[..value_bytes].copy_from_slice(raw);
            at += value_bytes;
            out.extend(std::iter::repeat_n(u32::from_le_bytes(word), run));
            left -= run;
        }
    }
    Ok(at)
}

/// An integer type DELTA_BINARY_PACKED decodes: deltas add with wrapping at its width.
pub trait Unpacked: Copy + Default {
    fn from_i64(v: i64) -> Self;
    fn plus(self, delta: i64) -> Self;
    fn plain(bytes: &[u8]) -> Self;
    const SIZE: usize;
}

impl Unpacked for i32 {
    fn from_i64(v: i64) -> i32 {
        v as i32
    }
    fn plus(self, delta: i64) -> i32 {
        self.wrapping_add(delta as i32)
    }
    fn plain(bytes: &[u8]) -> i32 {
        i32::from_le_bytes(bytes.try_into().expect("4 bytes"))
    }
    const SIZE: usize = 4;
}

impl Unpacked for i64 {
    fn from_i64(v: i64) -> i64 {
        v
    }
    fn plus(self, delta: i64) -> i64 {
        self.wrapping_add(delta)
    }
    fn plain(bytes: &[u8]) -> i64 {
        i64::from_le_bytes(bytes.try_into().expect("8 bytes"))
    }
    const SIZE: usize = 8;
}

/// DELTA_BINARY_PACKED values appended to `out` (the count is in its header).
pub fn delta_binary_packed<T: Unpacked>(bytes: &[u8], out: &mut Vec<T>) -> Result<(), Truncated> {
    let mut at = 0;
    let block = usize::try_from(varint(bytes, &mut at)?).map_err(|_| Truncated)?;
    let miniblocks = usize::try_from(varint(bytes, &mut at)?).map_err(|_| Truncated)?;
    let count = usize::try_from(varint(bytes, &mut at)?).map_err(|_| Truncated)?;
    let first = zigzag(bytes, &mut at)?;
    if count == 0 {
        return Ok(());
    }
    if miniblocks == 0 || block == 0 || block % miniblocks != 0 {
        return Err(Truncated);
    }
    let per_mini = block / miniblocks;
    out.reserve(count);
    let mut value = T::from_i64(first);
    out.push(value);
    let mut left = count - 1;
    // a miniblock's deltas, unpacked a chunk at a time before they are summed: the sums then
    // go into the column with no check of its room per value
    let mut deltas = [0u64; DELTA_CHUNK];
    while left > 0 {
        let min = zigzag(bytes, &mut at)?;
        let widths = bytes.get(at..at + miniblocks).ok_or(Truncated)?;
        at += miniblocks;
        for &width in widths {
            if left == 0 {
                break;
            }
            let len = per_mini * usize::from(width) / 8;
            if at + len > bytes.len() {
                return Err(Truncated);
            }
            let n = per_mini.min(left);
            if width == 0 {
                // every delta is the block's minimum: a steady step, no bits to read
                let start = value;
                out.extend((1..=n as i64).map(|k| start.plus(min.wrapping_mul(k))));
                value = start.plus(min.wrapping_mul(n as i64));
            } else {
                let mut done = 0;
                while done < n {
                    let m = (n - done).min(DELTA_CHUNK);
                    // the rest of the page, not just this miniblock: its last values still
                    // load a whole 64-bit word past its end (a chunk starts on a byte: 64
                    // values of any width fill whole bytes)
                    let packed = &bytes[at + done * usize::from(width) / 8..];
                    let mut k = 0;
                    unpack(packed, width, m, |d| {
                        deltas[k] = d;
                        k += 1;
                    })?;
                    out.extend(deltas[..m].iter().map(|&d| {
                        value = value.plus(min.wrapping_add(d as i64));
                        value
                    }));
                    done += m;
                }
            }
            at += len;
            left -= n;
        }
    }
    Ok(())
}

/// Deltas unpacked at a time (a multiple of 8, so that each chunk starts on a byte).
const DELTA_CHUNK: usize = 64;

/// `count` PLAIN integers appended to `out`.
pub fn plain<T: Unpacked>(bytes: &[u8], count: usize, out: &mut Vec<T>) -> Result<(), Truncated> {
    let bytes = bytes.get(..count * T::SIZE).ok_or(Truncated)?;
    out.extend(bytes.chunks_exact(T::SIZE).map(T::plain));
    Ok(())
}

/// `count` PLAIN byte arrays (a 4-byte length, then the bytes): their offsets and bytes.
pub fn plain_byte_arrays(bytes: &[u8], count: usize) -> Result<(Vec<i32>, Vec<u8>), Truncated> {
    let mut offsets = Vec::with_capacity(count + 1);
    let mut data = Vec::new();
    offsets.push(0);
    let mut at = 0;
    for _ in 0..count {
        let len = bytes.get(at..at + 4).ok_or(Truncated)?;
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        at += 4;
        data.extend_from_slice(bytes.get(at..at + len).ok_or(Truncated)?);
        at += len;
        offsets.push(i32::try_from(data.len()).map_err(|_| Truncated)?);
    }
    Ok((offsets, data))
}

#[cfg(test)]
mod tests {
    use super::super::encode;
    use super::*;

    #[test]
    fn the_hybrid_reads_back() {
        let mut values = vec![1u32; 20];
        values.extend([0, 5, 3, 7, 7]);
        let mut bytes = Vec::new();
        encode::hybrid(&mut bytes, &values, 3);
        let mut back = Vec::new();
        let used = hybrid(&bytes, 3, values.len(), &mut back).unwrap();
        assert_eq!((back, used), (values, bytes.len()));
    }

    #[test]
    fn the_hybrid_reads_back_at_every_width() {
        for width in 1..=32u8 {
            for len in [1usize, 7, 8, 9, 64, 100] {
                let top = if width == 32 {
                    u32::MAX
                } else {
                    (1 << width) - 1
                };
                let values: Vec<u32> = (0..len as u32)
                    .map(|k| k.wrapping_mul(2_654_435_761) & top)
                    .collect();
                let mut bytes = Vec::new();
                encode::hybrid(&mut bytes, &values, width);
                let mut back = Vec::new();
                hybrid(&bytes, width, len, &mut back).unwrap();
                assert_eq!(back, values, "width {width}, {len} values");
            }
        }
    }

    /// Values through the delta encoder and back.
    fn round_trip<T: encode::DeltaInt + Unpacked>(values: &[T]) -> Vec<T> {
        let mut bytes = Vec::new();
        encode::delta_binary_packed(&mut bytes, values);
        let mut back = Vec::new();
        delta_binary_packed::<T>(&bytes, &mut back).unwrap();
        back
    }

    #[test]
    fn deltas_read_back_at_both_widths() {
        let wide: Vec<i64> = (0..300)
            .map(|k| k * k * 1_000_003 - (k % 7) * 1_000_000_007)
            .collect();
        assert_eq!(round_trip(&wide), wide);
        let narrow = [i32::MIN, i32::MAX, 0, -5, 17];
        assert_eq!(round_trip(&narrow), narrow);
    }

    #[test]
    fn steady_steps_read_back_wrapping_at_the_type() {
        // miniblocks of width 0 (one step throughout) between wider ones, lengths off 32
        let mut steady: Vec<i32> = (0..97)
            .map(|k| (i32::MAX - 3).wrapping_add(k * 2))
            .collect();
        steady.extend((0..40).map(|k| k * k));
        steady.extend(std::iter::repeat_n(7, 70));
        assert_eq!(round_trip(&steady), steady);
        let big: Vec<i64> = (0..65).map(|k| i64::MIN.wrapping_add(k << 60)).collect();
        assert_eq!(round_trip(&big), big);
    }

    #[test]
    fn a_miniblock_longer_than_a_chunk_reads_back() {
        // another writer's layout: one miniblock of 128 deltas a block, 2 blocks
        let values: Vec<i64> = (0..257).map(|k| (k * 37) % 101 - 50).collect();
        let mut bytes = Vec::new();
        for v in [128u64, 1, values.len() as u64] {
            encode::varint(&mut bytes, v);
        }
        encode::zigzag(&mut bytes, values[0]);
        for block in values.windows(2).collect::<Vec<_>>().chunks(128) {
            let deltas: Vec<i64> = block.iter().map(|w| w[1] - w[0]).collect();
            let min = *deltas.iter().min().unwrap();
            encode::zigzag(&mut bytes, min);
            bytes.push(8);
            encode::bit_pack(&mut bytes, deltas.iter().map(|&d| (d - min) as u64), 8);
        }
        let mut back = Vec::new();
        delta_binary_packed::<i64>(&bytes, &mut back).unwrap();
        assert_eq!(back, values);
    }

    #[test]
    fn cut_bytes_are_an_error() {
        let mut bytes = Vec::new();
        encode::delta_binary_packed(&mut bytes, &[1i64, 900, 3, 4_000_000]);
        let mut back = Vec::new();
        assert!(delta_binary_packed::<i64>(&bytes[..bytes.len() - 2], &mut back).is_err());
    }
}
