//! Numbers as printf prints them in blkparse's columns: the scanner takes only these, so that
//! printing the row again gives the line back byte for byte.

/// The longest number taken: 18 digits always fit an i64; longer ones go to the reference
/// parser, which says which column they do not fit.
const MAX_DIGITS: usize = 18;

/// The 8 bytes at `at`, little-endian; past the line's end they read as NULs (neither digits
/// nor spaces), so a run stops there.
#[inline(always)]
pub fn word(line: &[u8], at: usize) -> u64 {
    match line.get(at..at + 8) {
        Some(bytes) => u64::from_le_bytes(bytes.try_into().unwrap()),
        None => {
            let mut bytes = [0u8; 8];
            let rest = line.get(at..).unwrap_or_default();
            bytes[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(bytes)
        }
    }
}

pub const ONES: u64 = 0x0101_0101_0101_0101;
const POWERS_OF_TEN: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// How many of the 8 bytes of `word`, from its first, are ASCII digits (no carry crosses a
/// byte: a digit's high nibble is 3, its low one at most 9).
#[inline(always)]
pub fn leading_digits(word: u64) -> usize {
    let high = (word & (0xF0 * ONES)) ^ (0x30 * ONES);
    let low = ((word & (0x0F * ONES)) + 0x06 * ONES) & (0xF0 * ONES);
    ((high | low).trailing_zeros() / 8) as usize
}

/// The value of the first `count` (1 to 8) digits of `word`, eight at a time: pairs, then
/// quads, then the whole, each step one multiply.
#[inline(always)]
pub fn digits_value(word: u64, count: usize) -> u64 {
    let v = (word & (0x0F * ONES)) << (8 * (8 - count));
    let v = (v.wrapping_mul(10 * 256 + 1) >> 8) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100 * 65536 + 1) >> 16) & 0x0000_FFFF_0000_FFFF;
    v.wrapping_mul(10000 * (1 << 32) + 1) >> 32
}

/// The run of ASCII digits at `at`: (value, end). The value wraps past 19 digits, where the
/// callers refuse it anyway.
#[inline(always)]
pub fn digits(line: &[u8], at: usize) -> (u64, usize) {
    let mut value = 0u64;
    let mut end = at;
    loop {
        let w = word(line, end);
        let count = leading_digits(w);
        if count == 0 {
            return (value, end);
        }
        value = value
            .wrapping_mul(POWERS_OF_TEN[count])
            .wrapping_add(digits_value(w, count));
        end += count;
        if count < 8 {
            return (value, end);
        }
    }
}

/// A number at `at` as `%d` prints it: 1 to 18 digits, no leading zero but in "0" itself.
/// Returns (value, end).
#[inline(always)]
pub fn number(line: &[u8], at: usize) -> Option<(u64, usize)> {
    let (value, end) = digits(line, at);
    let count = end - at;
    let canonical = (1..=MAX_DIGITS).contains(&count) && (count == 1 || line[at] != b'0');
    canonical.then_some((value, end))
}

/// The spaces printf puts before a right-aligned field of `len` characters in `width`.
pub fn pad(len: usize, width: usize) -> usize {
    width.saturating_sub(len)
}

/// The spaces at `at`: where they end.
#[inline(always)]
pub fn skip_spaces(line: &[u8], at: usize) -> usize {
    let mut end = at;
    loop {
        let count = ((word(line, end) ^ (0x20 * ONES)).trailing_zeros() / 8) as usize;
        end += count;
        if count < 8 {
            return end;
        }
    }
}

/// The number `%{width}d` prints right-aligned in the first `width` (1 to 8) bytes of `word`:
/// spaces, then 1 to `width` digits with no leading zero but in "0" itself.
#[inline(always)]
pub fn right_aligned_in_word(word: u64, width: usize) -> Option<u64> {
    let spaces = (((word ^ (0x20 * ONES)).trailing_zeros() / 8) as usize).min(width);
    let count = width - spaces;
    let rest = word >> (8 * spaces as u32 % 64);
    let canonical = count > 0
        && leading_digits(rest) >= count
        && (count == 1 || rest & 0xFF != u64::from(b'0'));
    canonical.then(|| digits_value(rest, count))
}

/// Where the run of printable ASCII (space to `~`) at `at` ends: the first other byte, or the
/// end of `data`. Eight bytes a step: a byte is printable when its high bit is clear and its
/// low seven bits are at least 0x20 and below 0x7F (no carry crosses a byte).
#[inline(always)]
pub fn printable_end(data: &[u8], at: usize) -> usize {
    let mut end = at;
    loop {
        let w = word(data, end);
        let low = w & (0x7F * ONES);
        let at_least_space = (low + 0x60 * ONES) & (0x80 * ONES);
        let delete = (low + ONES) & (0x80 * ONES);
        let other = (w & (0x80 * ONES)) | delete | (at_least_space ^ (0x80 * ONES));
        if other != 0 {
            return (end + (other.trailing_zeros() / 8) as usize).min(data.len());
        }
        end += 8;
    }
}

/// A `%{width}d` field after `gap` separating spaces: exactly gap plus its padding spaces,
/// then the number. Returns (value, number's digit count, end).
#[inline(always)]
pub fn padded_number(
    line: &[u8],
    at: usize,
    gap: usize,
    width: usize,
) -> Option<(u64, usize, usize)> {
    let start = skip_spaces(line, at);
    let (value, end) = number(line, start)?;
    let count = end - start;
    (start - at == gap + pad(count, width)).then_some((value, count, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_takes_printf_numbers_only() {
        assert_eq!(number(b"1024 +", 0), Some((1024, 4)));
        assert_eq!(number(b"0]", 0), Some((0, 1)));
        assert_eq!(number(b"007", 0), None, "printf prints no leading zero");
        assert_eq!(number(b"x", 0), None, "no digits");
        assert_eq!(
            number(b"123456789012345678", 0),
            Some((123456789012345678, 18))
        );
        assert_eq!(
            number(b"1234567890123456789", 0),
            None,
            "19 digits may not fit"
        );
    }

    #[test]
    fn padded_number_wants_printf_spacing() {
        // "%3d," of 8 is "  8"
        assert_eq!(padded_number(b"  8,0", 0, 0, 3), Some((8, 1, 3)));
        assert_eq!(padded_number(b" 8,0", 0, 0, 3), None, "a space lost");
        assert_eq!(padded_number(b"259,0", 0, 0, 3), Some((259, 3, 3)));
        // " %8d" of 5 is 8 spaces then 5
        assert_eq!(padded_number(b"        5 ", 0, 1, 8), Some((5, 1, 9)));
        assert_eq!(padded_number(b"       5 ", 0, 1, 8), None);
        // a number wider than its field has only the gap before it
        assert_eq!(padded_number(b" 123456", 0, 1, 5), Some((123456, 6, 7)));
    }

    #[test]
    fn digits_eight_at_a_time() {
        for text in [
            "7",
            "12",
            "1234567",
            "12345678",
            "123456789",
            "1234567890123456",
            "1",
        ] {
            for tail in ["", " ", "x", "/"] {
                let line = format!("{text}{tail}");
                let want: u64 = text.parse().unwrap();
                assert_eq!(digits(line.as_bytes(), 0), (want, text.len()), "{line:?}");
            }
        }
        assert_eq!(digits(b"ab12", 2), (12, 4));
        assert_eq!(digits(b"12", 2), (0, 2));
        assert_eq!(digits(b":/09", 0), (0, 0));
        assert_eq!(digits(b"09", 0), (9, 2));
        for b in 0..=255u8 {
            let line = [b'1', b];
            let want = if b.is_ascii_digit() { 2 } else { 1 };
            assert_eq!(digits(&line, 0).1, want, "byte {b}");
        }
    }

    #[test]
    fn spaces_eight_at_a_time() {
        assert_eq!(skip_spaces(b"            x", 0), 12);
        assert_eq!(skip_spaces(b"        ", 0), 8);
        assert_eq!(skip_spaces(b"  ", 5), 5);
    }

    /// The word reader against the byte-by-byte rule it replaces, on every field of spaces,
    /// digits and one other byte.
    #[test]
    fn right_aligned_in_word_is_printf_right_alignment() {
        let by_bytes = |field: &[u8]| -> Option<u64> {
            let spaces = field.iter().take_while(|&&b| b == b' ').count();
            let digits = &field[spaces..];
            if digits.is_empty()
                || (digits.len() > 1 && digits[0] == b'0')
                || !digits.iter().all(u8::is_ascii_digit)
            {
                return None;
            }
            Some(digits.iter().fold(0, |v, &b| v * 10 + u64::from(b - b'0')))
        };
        let alphabet = [b' ', b'0', b'1', b'7', b'9', b'x', b'.', 0];
        for width in 1..=4 {
            let fields = alphabet.len().pow(width as u32);
            for k in 0..fields {
                let mut line = [b'#'; 8];
                let mut n = k;
                for b in line.iter_mut().take(width) {
                    *b = alphabet[n % alphabet.len()];
                    n /= alphabet.len();
                }
                let w = u64::from_le_bytes(line);
                assert_eq!(
                    right_aligned_in_word(w, width),
                    by_bytes(&line[..width]),
                    "{line:?} width {width}"
                );
            }
        }
        let seq = u64::from_le_bytes(*b"  123456");
        assert_eq!(right_aligned_in_word(seq, 8), Some(123_456));
        assert_eq!(
            right_aligned_in_word(u64::from_le_bytes(*b"12345678"), 8),
            Some(12_345_678)
        );
        assert_eq!(
            right_aligned_in_word(u64::from_le_bytes(*b"        "), 8),
            None
        );
    }

    #[test]
    fn printable_end_stops_at_the_first_other_byte() {
        for b in 0..=255u8 {
            for at in 0..12 {
                let mut data = vec![b'a'; 20];
                data[at] = b;
                let want = if (32..127).contains(&b) { 20 } else { at };
                assert_eq!(printable_end(&data, 0), want, "byte {b} at {at}");
                assert_eq!(printable_end(&data[..at], 0), at, "the end of the data");
            }
        }
        assert_eq!(printable_end(b"[fio]\n  8,0", 0), 5);
        assert_eq!(printable_end(b"ab", 2), 2);
    }

    #[test]
    fn digits_wrap_instead_of_overflowing() {
        let (_, end) = digits(b"99999999999999999999999", 0);
        assert_eq!(end, 23);
        assert_eq!(pad(5, 3), 0);
        assert_eq!(skip_spaces(b"   x", 0), 3);
    }
}
