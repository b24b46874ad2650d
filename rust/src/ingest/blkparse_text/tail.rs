//! What follows the RWBS column, per action (blkparse_fmt.c, process_default()), in the shapes
//! blkparse prints for block IO. Rarer shapes (elapsed times, SCSI pass-through payloads, a
//! process name that is not printable ASCII) go to the reference parser.

use super::printf::number;
use crate::ingest::action::Action;

const INT32_MAX: u64 = i32::MAX as u64;

/// The tail of one event line; `comm` borrows the line's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail<'a> {
    /// C, R: `sector [+ count] [error]`.
    Completion {
        sector: i64,
        nsectors: i32,
        error: i32,
    },
    /// U, UT, T: `[comm] depth`.
    Unplug { comm: &'a str, depth: i32 },
    /// X: `sector / split_sector [comm]`.
    Split {
        sector: i64,
        split_sector: i64,
        comm: &'a str,
    },
    /// Q G I D M F S B: `sector + count [comm]`.
    Sized {
        sector: i64,
        nsectors: i32,
        comm: &'a str,
    },
    /// P, and the others without a position: `[comm]`.
    CommOnly { comm: &'a str },
}

/// The tail of an event with `action` (A and m never reach here), or None for the reference
/// parser.
#[inline(always)]
pub fn parse_tail(action: Action, tail: &[u8]) -> Option<Tail<'_>> {
    tail_of(action, tail, false)
}

/// `parse_tail` of a tail whose every byte is printable ASCII (the caller checked): the
/// process name is not checked again.
#[inline(always)]
pub fn parse_printable_tail(action: Action, tail: &[u8]) -> Option<Tail<'_>> {
    debug_assert!(tail.iter().all(|b| (32..127).contains(b)));
    tail_of(action, tail, true)
}

/// The tail; `printable`: every byte of it is known to be printable ASCII.
#[inline(always)]
fn tail_of(action: Action, tail: &[u8], printable: bool) -> Option<Tail<'_>> {
    match action {
        Action::Complete | Action::Requeue => completion(tail),
        Action::Unplug | Action::UnplugTimer | Action::Timer => unplug(tail, printable),
        Action::Split => split(tail, printable),
        Action::Plug => Some(Tail::CommOnly {
            comm: bracketed_comm(tail, 0, printable)?,
        }),
        _ if tail.first() == Some(&b'[') => Some(Tail::CommOnly {
            comm: bracketed_comm(tail, 0, printable)?,
        }),
        _ => sized(tail, printable),
    }
}

fn fits_i32(value: u64) -> Option<i32> {
    (value <= INT32_MAX).then_some(value as i32)
}

/// `text` at `at`.
fn has(tail: &[u8], at: usize, text: &[u8]) -> bool {
    tail.get(at..at + text.len()) == Some(text)
}

/// `[comm]` from `at` to the end of the line: the name runs to the line's last `]`, and holds
/// printable ASCII only (other bytes need comm_raw, which the reference parser fills).
fn bracketed_comm(tail: &[u8], at: usize, printable: bool) -> Option<&str> {
    let inner = tail.get(at..)?.strip_prefix(b"[")?.strip_suffix(b"]")?;
    plain_comm(inner, printable)
}

/// A process name the scanner keeps as is: printable ASCII (maybe empty), checked here unless
/// `printable` says it is known.
fn plain_comm(comm: &[u8], printable: bool) -> Option<&str> {
    if printable || comm.iter().all(|b| (32..127).contains(b)) {
        // SAFETY: printable ASCII is UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(comm) })
    } else {
        None
    }
}

/// C and R: `sector [error]` or `sector + count [error]`; blkparse prints no `+ 0`, and the
/// error is a plain or negative number (no `-0`).
fn completion(tail: &[u8]) -> Option<Tail<'_>> {
    let (sector, mut at) = number(tail, 0)?;
    let mut nsectors = 0;
    if at + 3 < tail.len() && has(tail, at, b" + ") {
        let (count, end) = number(tail, at + 3)?;
        if count == 0 {
            return None;
        }
        nsectors = fits_i32(count)?;
        at = end;
    }
    if !has(tail, at, b" [") || tail.last() != Some(&b']') {
        return None;
    }
    at += 2;
    let negative = tail.get(at) == Some(&b'-');
    at += usize::from(negative);
    let (error, end) = number(tail, at)?;
    if end != tail.len() - 1 || (negative && error == 0) {
        return None;
    }
    let error = fits_i32(error)?;
    Some(Tail::Completion {
        sector: sector as i64,
        nsectors,
        error: if negative { -error } else { error },
    })
}

/// U, UT and T: `[comm] depth`, the depth being the number that ends the line.
fn unplug(tail: &[u8], printable: bool) -> Option<Tail<'_>> {
    let digits = tail.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let before = tail.len() - digits;
    if digits == 0 || before < 2 || !tail[..before].ends_with(b"] ") {
        return None;
    }
    let (depth, _) = number(tail, before)?;
    let inner = tail[..before - 2].strip_prefix(b"[")?;
    Some(Tail::Unplug {
        comm: plain_comm(inner, printable)?,
        depth: fits_i32(depth)?,
    })
}

/// X: `sector / split_sector [comm]`.
fn split(tail: &[u8], printable: bool) -> Option<Tail<'_>> {
    let (sector, at) = number(tail, 0)?;
    if at + 3 >= tail.len() || !has(tail, at, b" / ") {
        return None;
    }
    let (split_sector, at) = number(tail, at + 3)?;
    if tail.get(at) != Some(&b' ') {
        return None;
    }
    Some(Tail::Split {
        sector: sector as i64,
        split_sector: split_sector as i64,
        comm: bracketed_comm(tail, at + 1, printable)?,
    })
}

/// `sector + count [comm]`.
fn sized(tail: &[u8], printable: bool) -> Option<Tail<'_>> {
    let (sector, at) = number(tail, 0)?;
    if at + 3 >= tail.len() || !has(tail, at, b" + ") {
        return None;
    }
    let (count, at) = number(tail, at + 3)?;
    if tail.get(at) != Some(&b' ') {
        return None;
    }
    Some(Tail::Sized {
        sector: sector as i64,
        nsectors: fits_i32(count)?,
        comm: bracketed_comm(tail, at + 1, printable)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions() {
        let c = parse_tail(Action::Complete, b"1024 + 8 [0]");
        let want = Tail::Completion {
            sector: 1024,
            nsectors: 8,
            error: 0,
        };
        assert_eq!(c, Some(want));
        let flush = parse_tail(Action::Complete, b"0 [-5]");
        let want = Tail::Completion {
            sector: 0,
            nsectors: 0,
            error: -5,
        };
        assert_eq!(flush, Some(want));
        assert_eq!(parse_tail(Action::Complete, b"0 + 0 [0]"), None, "no '+ 0'");
        assert_eq!(parse_tail(Action::Complete, b"0 [-0]"), None, "no '-0'");
        let elapsed = b"1024 + 8 (   12345) [0]";
        assert_eq!(
            parse_tail(Action::Requeue, elapsed),
            None,
            "elapsed: the reference parser"
        );
    }

    #[test]
    fn unplugs() {
        let u = parse_tail(Action::Unplug, b"[kworker/0:1] 3");
        let want = Tail::Unplug {
            comm: "kworker/0:1",
            depth: 3,
        };
        assert_eq!(u, Some(want));
        let nested = parse_tail(Action::Timer, b"[a] b] 12");
        let want = Tail::Unplug {
            comm: "a] b",
            depth: 12,
        };
        assert_eq!(nested, Some(want));
        let empty = Tail::Unplug { comm: "", depth: 3 };
        assert_eq!(parse_tail(Action::Unplug, b"[] 3"), Some(empty));
        assert_eq!(
            parse_tail(Action::Unplug, b"[x\x01] 3"),
            None,
            "not printable"
        );
        assert_eq!(parse_tail(Action::Unplug, b"[x]3"), None);
        assert_eq!(parse_tail(Action::Unplug, b"[x] 03"), None);
    }

    #[test]
    fn splits() {
        let x = parse_tail(Action::Split, b"100 / 164 [fio]");
        let want = Tail::Split {
            sector: 100,
            split_sector: 164,
            comm: "fio",
        };
        assert_eq!(x, Some(want));
        assert_eq!(
            parse_tail(Action::Split, b"100 / 164x[fio]"),
            None,
            "a split sector runs up to a space, as blkparse prints it"
        );
    }

    /// A printable tail reads the same whether or not it is known to be printable.
    #[test]
    fn printable_tails_read_as_any_tail() {
        let tails: [&[u8]; 7] = [
            b"1024 + 8 [0]",
            b"[kworker/0:1] 3",
            b"[a] b] 12",
            b"100 / 164 [fio]",
            b"2048 + 8 [dd]",
            b"[kworker/3:1H]",
            b"[]",
        ];
        for tail in tails {
            for action in Action::ALL {
                assert_eq!(parse_printable_tail(action, tail), parse_tail(action, tail));
            }
        }
    }

    #[test]
    fn sized_and_comm_only() {
        let q = parse_tail(Action::Queue, b"2048 + 8 [dd]");
        let want = Tail::Sized {
            sector: 2048,
            nsectors: 8,
            comm: "dd",
        };
        assert_eq!(q, Some(want));
        let flush = parse_tail(Action::Issue, b"[kworker/3:1H]");
        assert_eq!(
            flush,
            Some(Tail::CommOnly {
                comm: "kworker/3:1H"
            })
        );
        assert_eq!(
            parse_tail(Action::Plug, b"[fio]"),
            Some(Tail::CommOnly { comm: "fio" })
        );
        assert_eq!(parse_tail(Action::Plug, b"1 + 8 [fio]"), None);
        assert_eq!(
            parse_tail(Action::Queue, b"2048 + 8 [caf\xc3\xa9]"),
            None,
            "not ASCII"
        );
        let too_many = b"2048 + 2147483648 [dd]";
        assert_eq!(
            parse_tail(Action::Queue, too_many),
            None,
            "a count past i32"
        );
    }
}
