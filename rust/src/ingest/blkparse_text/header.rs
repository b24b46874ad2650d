//! The seven header columns of an event line, as blkparse_fmt.c's process_default() prints
//! them: "%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s ".

use super::printf::{
    digits, digits_value, leading_digits, number, pad, padded_number, right_aligned_in_word,
    skip_spaces,
};
use std::sync::LazyLock;

use crate::ingest::action::Action;
use crate::ingest::rwbs::{Op, Rwbs};

const INT32_MAX: u64 = i32::MAX as u64;
/// The largest seconds whose nanoseconds still fit an i64.
const MAX_SECONDS: u64 = 9_223_372_035;

/// The header of one event line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub dev_major: i32,
    pub dev_minor: i32,
    pub cpu: i32,
    pub seq: i64,
    pub time_ns: i64,
    pub pid: i64,
    pub action: Action,
    pub rwbs: Rwbs,
}

/// The header of `line` and where its tail starts (past the one space after RWBS), when the
/// line is spaced exactly as blkparse prints it. Lines spaced otherwise (copied from a
/// terminal, tabs, a lost leading space), A and m lines go to the reference parser, which
/// keeps their bytes.
#[inline]
pub fn parse_header(line: &[u8]) -> Option<(Header, usize)> {
    match columns_in_place(line) {
        Some(header) => Some(header),
        None => parse_header_anywhere(line),
    }
}

/// Where each number column of the header is when every value fits its printf width: most
/// lines. (start, width) of major, minor, cpu, seq, seconds, nanoseconds, pid.
const MAJOR: usize = 0;
const MINOR: usize = 4;
const CPU: usize = 8;
const SEQ: usize = 11;
const SECONDS: usize = 20;
const NANOS: usize = 26;
const PID: usize = 36;
/// Where the action column ends when every number fits its width.
const ACTION_END: usize = 44;

/// The header when its numbers all fit their printf widths, so that each sits at a known
/// place ("%3d,%-3d %2d %8d %5d.%09lu %5u %2s "); None for the general reader. Each number
/// column is read as one 8-byte word. `line` may run on past the line's end: a newline is
/// none of the bytes a column holds, so the columns stop there as they would at its end.
#[inline(always)]
pub fn columns_in_place(line: &[u8]) -> Option<(Header, usize)> {
    // (an event line is longer: its RWBS column ends at byte 48)
    let head: &[u8; 48] = line.get(..48)?.try_into().ok()?;
    let word_at = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().unwrap());
    let separators = [
        (3, b','),
        (7, b' '),
        (10, b' '),
        (19, b' '),
        (25, b'.'),
        (35, b' '),
        (PID + 5, b' '),
    ];
    if separators.iter().any(|&(at, b)| head[at] != b) {
        return None;
    }
    let dev_major = right_aligned_in_word(word_at(MAJOR), 3)?;
    let dev_minor = left_aligned_minor(word_at(MINOR))?;
    let cpu = right_aligned_in_word(word_at(CPU), 2)?;
    let seq = right_aligned_in_word(word_at(SEQ), 8)?;
    let seconds = right_aligned_in_word(word_at(SECONDS), 5)?;
    let nanos_word = word_at(NANOS);
    let last_nano = head[NANOS + 8].wrapping_sub(b'0');
    if leading_digits(nanos_word) < 8 || last_nano > 9 {
        return None;
    }
    let nanos = digits_value(nanos_word, 8) * 10 + u64::from(last_nano);
    let pid = right_aligned_in_word(word_at(PID), 5)?;
    let action = action_in_place(head)?;
    let (rwbs, at) = match rwbs_in_place(line) {
        Some(rwbs) => rwbs,
        None => rwbs_column(line, ACTION_END)?,
    };
    let header = Header {
        dev_major: dev_major as i32,
        dev_minor: dev_minor as i32,
        cpu: cpu as i32,
        seq: seq as i64,
        time_ns: (seconds * 1_000_000_000 + nanos) as i64,
        pid: pid as i64,
        action,
        rwbs,
    };
    Some((header, at + 1))
}

/// "%-3d ": the minor, left-aligned in the 3 bytes at the start of `word` (byte 3 is the
/// space after it): digits, then spaces.
#[inline(always)]
fn left_aligned_minor(word: u64) -> Option<u64> {
    let digits = leading_digits(word).min(3);
    let field = word & 0x00FF_FFFF;
    // the field's bytes after the digits must be spaces (0x20 each)
    let padding = (field ^ 0x0020_2020) >> (8 * digits);
    let canonical = digits > 0 && padding == 0 && (digits == 1 || word & 0xFF != u64::from(b'0'));
    canonical.then(|| digits_value(word, digits))
}

/// " %2s " where every column before it fits its width: one letter after two spaces, or UT
/// after one (A and m are left to the reference parser, as `action_column` says).
#[inline(always)]
fn action_in_place(head: &[u8; 48]) -> Option<Action> {
    if head[ACTION_END] != b' ' {
        return None;
    }
    let action = match (head[PID + 6], head[PID + 7]) {
        (b' ', letter) => Action::from_letter(letter)?,
        (b'U', b'T') => Action::UnplugTimer,
        _ => return None,
    };
    (!matches!(action, Action::Remap | Action::Message)).then_some(action)
}

/// The bytes an RWBS column of up to 3 letters holds: a space, then today's letters.
const RWBS_ALPHABET: &[u8; 9] = b" FRWDNASM";

/// What `rwbs_column` reads of every " %3s " whose three bytes are of RWBS_ALPHABET, looked
/// up by the bytes' places in the alphabet (1 to 9, 4 bits each): a few loads, where the
/// letter-by-letter reading is a branch a letter.
struct RwbsInPlace {
    /// Each byte's place in RWBS_ALPHABET from 1, 0 for any other byte.
    place: [u8; 256],
    /// By the three places: the RWBS code, NOT_RWBS where `rwbs_column` takes no RWBS that
    /// ends at the column's last space.
    codes: [u8; 4096],
}

const NOT_RWBS: u8 = u8::MAX;

static RWBS_IN_PLACE: LazyLock<RwbsInPlace> = LazyLock::new(|| {
    let mut table = RwbsInPlace {
        place: [0; 256],
        codes: [NOT_RWBS; 4096],
    };
    for (k, &b) in RWBS_ALPHABET.iter().enumerate() {
        table.place[usize::from(b)] = k as u8 + 1;
    }
    for (a, b, c) in alphabet_triples() {
        let column = [
            b' ',
            RWBS_ALPHABET[a],
            RWBS_ALPHABET[b],
            RWBS_ALPHABET[c],
            b' ',
        ];
        // only a reading that ends at the column's last space read nothing past the column
        if let Some((rwbs, 4)) = rwbs_column(&column, 0) {
            table.codes[(a + 1) << 8 | (b + 1) << 4 | (c + 1)] = rwbs.code();
        }
    }
    table
});

/// Every (a, b, c) of places in RWBS_ALPHABET (from 0).
fn alphabet_triples() -> impl Iterator<Item = (usize, usize, usize)> {
    let n = RWBS_ALPHABET.len();
    (0..n * n * n).map(move |k| (k / (n * n), k / n % n, k % n))
}

/// " %3s " at ACTION_END when it holds an RWBS of up to 3 letters, as `rwbs_column` reads it
/// (the same RWBS and the same end); None sends the line to `rwbs_column`.
#[inline(always)]
fn rwbs_in_place(line: &[u8]) -> Option<(Rwbs, usize)> {
    let column: &[u8; 5] = line.get(ACTION_END..ACTION_END + 5)?.try_into().ok()?;
    if column[0] != b' ' || column[4] != b' ' {
        return None;
    }
    let table = &*RWBS_IN_PLACE;
    let place = |b: u8| usize::from(table.place[usize::from(b)]);
    let code = table.codes[place(column[1]) << 8 | place(column[2]) << 4 | place(column[3])];
    (code != NOT_RWBS).then(|| (Rwbs::from_code(code), ACTION_END + 4))
}

/// The header wherever its columns are: values wider than their printf width push the rest
/// of the line right.
fn parse_header_anywhere(line: &[u8]) -> Option<(Header, usize)> {
    let (dev_major, dev_minor, at) = device(line)?;
    let (cpu, _, at) = padded_number(line, at.0, at.1, 2)?;
    let at = followed_by(line, at, b' ')?;
    let cpu = fits_i32(cpu)?;
    let (seq, _, at) = padded_number(line, at, 1, 8)?;
    let at = followed_by(line, at, b' ')?;
    let (time_ns, at) = time(line, at)?;
    let (pid, _, at) = padded_number(line, at, 1, 5)?;
    let at = followed_by(line, at, b' ')?;
    let (action, at) = action_column(line, at)?;
    let (rwbs, at) = rwbs_column(line, at)?;
    let header = Header {
        dev_major,
        dev_minor,
        cpu,
        seq: seq as i64,
        time_ns,
        pid: pid as i64,
        action,
        rwbs,
    };
    Some((header, at + 1))
}

/// `at` when line[at] is `byte` (the separator after a column).
fn followed_by(line: &[u8], at: usize, byte: u8) -> Option<usize> {
    (line.get(at) == Some(&byte)).then_some(at)
}

fn fits_i32(value: u64) -> Option<i32> {
    (value <= INT32_MAX).then_some(value as i32)
}

/// "%3d,%-3d ": the device. Returns major, minor and (where the space after it starts, the
/// spaces the cpu column has before its padding): the minor is left-aligned in 3.
#[allow(clippy::type_complexity)]
fn device(line: &[u8]) -> Option<(i32, i32, (usize, usize))> {
    let (major, _, at) = padded_number(line, 0, 0, 3)?;
    let at = followed_by(line, at, b',')?;
    let (minor, end) = number(line, at + 1)?;
    let after = followed_by(line, end, b' ')?;
    let gap = pad(end - (at + 1), 3) + 1;
    Some((fits_i32(major)?, fits_i32(minor)?, (after, gap)))
}

/// " %5d.%09lu ": seconds and nanoseconds since the trace started, as integer nanoseconds.
fn time(line: &[u8], at: usize) -> Option<(i64, usize)> {
    let (seconds, _, at) = padded_number(line, at, 1, 5)?;
    let at = followed_by(line, at, b'.')?;
    if seconds > MAX_SECONDS {
        return None;
    }
    let (nanos, end) = digits(line, at + 1);
    if end - (at + 1) != 9 {
        return None;
    }
    let at = followed_by(line, end, b' ')?;
    Some(((seconds * 1_000_000_000 + nanos) as i64, at))
}

/// " %2s ": the action letters, right-aligned in 2. A and m are left to the reference parser
/// (A's remap tail, m's free text and cgroup column). Returns where the space after it is.
#[inline(always)]
fn action_column(line: &[u8], at: usize) -> Option<(Action, usize)> {
    let start = skip_spaces(line, at);
    let (action, end) = action_letters(line, start)?;
    if matches!(action, Action::Remap | Action::Message) {
        return None;
    }
    let end = followed_by(line, end, b' ')?;
    (start - at == 1 + pad(end - start, 2)).then_some((action, end))
}

/// The action at `at`: one letter followed by a space, or UT.
#[inline(always)]
fn action_letters(line: &[u8], at: usize) -> Option<(Action, usize)> {
    let first = *line.get(at)?;
    match line.get(at + 1) {
        Some(&b' ') | None => Some((Action::from_letter(first)?, at + 1)),
        Some(&b'T') if first == b'U' && matches!(line.get(at + 2), Some(&b' ') | None) => {
            Some((Action::UnplugTimer, at + 2))
        }
        Some(_) => None,
    }
}

/// " %3s ": RWBS right-aligned in 3 (wider ones have only the one space). Returns where the
/// space after it is.
#[inline(always)]
fn rwbs_column(line: &[u8], at: usize) -> Option<(Rwbs, usize)> {
    let start = skip_spaces(line, at);
    let (rwbs, end) = rwbs_letters(line, start)?;
    (start - at == 1 + pad(end - start, 3)).then_some((rwbs, end))
}

/// The RWBS letters today's blkparse prints, then a space: [F]op[F][A][S][M]. Older and
/// newer letters (B, E, U, DE, WZ, Z?) go to the reference parser.
#[inline(always)]
fn rwbs_letters(line: &[u8], at: usize) -> Option<(Rwbs, usize)> {
    let preflush =
        line.get(at) == Some(&b'F') && matches!(line.get(at + 1), Some(b'D' | b'W' | b'R' | b'N'));
    let mut at = at + usize::from(preflush);
    let op = Op::from_letter(*line.get(at)?)?;
    at += 1;
    let fua = line.get(at) == Some(&b'F');
    at += usize::from(fua);
    let readahead = line.get(at) == Some(&b'A');
    at += usize::from(readahead);
    let sync = line.get(at) == Some(&b'S');
    at += usize::from(sync);
    let meta = line.get(at) == Some(&b'M');
    at += usize::from(meta);
    let rwbs = Rwbs {
        preflush,
        op,
        fua,
        readahead,
        sync,
        meta,
    };
    followed_by(line, at, b' ').map(|at| (rwbs, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &[u8] = b"  8,0    1        5     0.000102310  4162  Q  WS 1024 + 8 [dd]";

    #[test]
    fn reads_the_columns_blkparse_prints() {
        let (h, tail) = parse_header(LINE).unwrap();
        assert_eq!((h.dev_major, h.dev_minor, h.cpu, h.seq), (8, 0, 1, 5));
        assert_eq!((h.time_ns, h.pid), (102_310, 4162));
        assert_eq!(h.action, Action::Queue);
        assert_eq!(h.rwbs.text(), "WS");
        assert_eq!(&LINE[tail..], b"1024 + 8 [dd]");
    }

    #[test]
    fn wide_columns_keep_one_space() {
        let line = b"259,12  11 123456789 12345.000000001 1234567 UT FWFSM [x] 1";
        let (h, tail) = parse_header(line).unwrap();
        assert_eq!((h.dev_major, h.dev_minor, h.cpu), (259, 12, 11));
        assert_eq!(h.seq, 123_456_789);
        assert_eq!(h.time_ns, 12_345_000_000_001);
        assert_eq!(h.action, Action::UnplugTimer);
        assert_eq!(h.rwbs.text(), "FWFSM");
        assert_eq!(&line[tail..], b"[x] 1");
    }

    #[test]
    fn columns_in_place_read_as_anywhere() {
        let lines: [&[u8]; 6] = [
            LINE,
            b"254,0    0      369     0.000000000  7747  Q  RA 23416664 + 8 [python3]",
            b"  8,16   1 99999999 99999.999999999 99999 UT   N [kworker/1:1H] 2",
            b"  7,0    0        1     0.000000000     0  C  WS 0 [0]",
            b"  8,0    1        5     0.000102310  4162  Q WBS 1024 + 8 [dd]",
            b"  8,0    1        5     0.000102310  4162  D FWFSM 1024 + 8 [dd]",
        ];
        for line in lines {
            let anywhere = parse_header_anywhere(line);
            assert_eq!(
                columns_in_place(line),
                anywhere,
                "{}",
                String::from_utf8_lossy(line)
            );
            assert_eq!(parse_header(line), anywhere);
        }
        // a value wider than its column: only the general reader takes it
        let wide = b"  8,0    1 123456789     0.000102310  4162  Q  WS 1024 + 8 [dd]";
        assert!(columns_in_place(wide).is_none());
        assert_eq!(parse_header(wide).unwrap().0.seq, 123_456_789);
        let leading_zero = b"  8,0   01        5     0.000102310  4162  Q  WS 1024 + 8 [dd]";
        assert!(columns_in_place(leading_zero).is_none());
        assert!(parse_header(leading_zero).is_none());
    }

    /// Every " %3s " of bytes an RWBS column may hold, and others, reads in place as
    /// `rwbs_column` reads it, and every RWBS of up to 3 letters is read in place.
    #[test]
    fn rwbs_in_place_reads_as_rwbs_column() {
        let bytes = b" FRWDNASMBUX0\n";
        let mut in_place = 0;
        for &a in bytes {
            for &b in bytes {
                for &c in bytes {
                    for &after in b" X" {
                        let mut line = vec![b'x'; ACTION_END];
                        line.extend([b' ', a, b, c, after]);
                        line.extend(b"1024 + 8 [dd]");
                        if let Some(got) = rwbs_in_place(&line) {
                            assert_eq!(Some(got), rwbs_column(&line, ACTION_END));
                            in_place += 1;
                        }
                    }
                }
            }
        }
        let short = (0..128u8).filter(|&c| Rwbs::from_code(c).text().len() <= 3);
        for code in short {
            let text = Rwbs::from_code(code).text();
            let mut line = vec![b'x'; ACTION_END];
            line.extend(format!(" {text:>3} 1 + 8 [dd]").bytes());
            let got = rwbs_in_place(&line).map(|(r, end)| (r.code(), end));
            assert_eq!(got, Some((code, ACTION_END + 4)), "{text}");
        }
        assert!(in_place > 20);
    }

    #[test]
    fn other_spacing_goes_to_the_reference_parser() {
        assert!(parse_header(&LINE[1..]).is_none(), "a leading space lost");
        let tabbed = b"  8,0    1        5     0.000102310  4162  Q\tWS 1024 + 8 [dd]";
        assert!(parse_header(tabbed).is_none());
        let wide = b"  8,0    1        5     0.000102310  4162  Q   WS 1024 + 8 [dd]";
        assert!(parse_header(wide).is_none());
    }

    #[test]
    fn remaps_messages_and_odd_rwbs_go_to_the_reference_parser() {
        let remap = b"  8,0    1        5     0.000102310  4162  A  WS 1024 + 8 <- (8,1) 0";
        assert!(parse_header(remap).is_none());
        let barrier = b"  8,0    1        5     0.000102310  4162  Q WBS 1024 + 8 [dd]";
        assert!(parse_header(barrier).is_none());
        let flush_op = b"259,0    3       19     0.001200000   812  D  FF [kworker/3:1H]";
        assert!(parse_header(flush_op).is_none());
    }

    #[test]
    fn numbers_past_their_columns_go_to_the_reference_parser() {
        let big_major = b"2147483648,0    1        5     0.000102310  4162  Q  WS 1 + 8 [dd]";
        assert!(parse_header(big_major).is_none());
        let short_nanos = b"  8,0    1        5     0.00010231  4162  Q  WS 1024 + 8 [dd]";
        assert!(parse_header(short_nanos).is_none());
        let late = b"  8,0    1        5 9223372036.000000000  4162  Q  WS 1 + 8 [dd]";
        assert!(
            parse_header(late).is_none(),
            "its nanoseconds do not fit an i64"
        );
    }
}
