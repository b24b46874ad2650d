//! Numbers as printf prints them in blkparse's columns: the scanner takes only these, so that
//! printing the row again gives the line back byte for byte.

/// The longest number taken: 18 digits always fit an i64; longer ones go to the reference
/// parser, which says which column they do not fit.
const MAX_DIGITS: usize = 18;

/// The run of ASCII digits at `at`: (value, end). The value wraps past 18 digits, where the
/// callers refuse it anyway.
pub fn digits(line: &[u8], at: usize) -> (u64, usize) {
    let mut value = 0u64;
    let mut end = at;
    while let Some(&b) = line.get(end) {
        if !b.is_ascii_digit() {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
        end += 1;
    }
    (value, end)
}

/// A number at `at` as `%d` prints it: 1 to 18 digits, no leading zero but in "0" itself.
/// Returns (value, end).
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
pub fn skip_spaces(line: &[u8], at: usize) -> usize {
    let mut end = at;
    while line.get(end) == Some(&b' ') {
        end += 1;
    }
    end
}

/// A `%{width}d` field after `gap` separating spaces: exactly gap plus its padding spaces,
/// then the number. Returns (value, number's digit count, end).
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
    fn digits_wrap_instead_of_overflowing() {
        let (_, end) = digits(b"99999999999999999999999", 0);
        assert_eq!(end, 23);
        assert_eq!(pad(5, 3), 0);
        assert_eq!(skip_spaces(b"   x", 0), 3);
    }
}
