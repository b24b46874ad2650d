//! RWBS: the operation and flags of an IO, as blkparse prints them (fill_rwbs).

/// What an IO does to the data: the op letter of RWBS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    Discard,
    /// N: no data (a flush, or an event without a size).
    None,
}

impl Op {
    /// The op in the order of the events table's op codes (event_line.OPS: R W D N).
    const ALL: [Op; 4] = [Op::Read, Op::Write, Op::Discard, Op::None];

    pub fn letter(self) -> &'static str {
        match self {
            Op::Read => "R",
            Op::Write => "W",
            Op::Discard => "D",
            Op::None => "N",
        }
    }

    fn index(self) -> u8 {
        self as u8
    }

    pub fn from_letter(letter: u8) -> Option<Op> {
        Some(match letter {
            b'R' => Op::Read,
            b'W' => Op::Write,
            b'D' => Op::Discard,
            b'N' => Op::None,
            _ => return None,
        })
    }
}

/// An RWBS column: a preflush F, the op, then F (fua), A (readahead), S (sync) and M (meta),
/// in the letter order blkparse prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rwbs {
    pub preflush: bool,
    pub op: Op,
    pub fua: bool,
    pub readahead: bool,
    pub sync: bool,
    pub meta: bool,
}

// The bits of an RWBS code: one small integer per RWBS, so a column stores a byte per row.
const PREFLUSH: u8 = 1;
const OP_SHIFT: u8 = 1;
const FUA: u8 = 8;
const READAHEAD: u8 = 16;
const SYNC: u8 = 32;
const META: u8 = 64;

/// The bits of the flags the events table has a column for, in its order: flush (preflush),
/// fua, readahead, sync, meta.
pub const FLAG_BITS: [u8; 5] = [PREFLUSH, FUA, READAHEAD, SYNC, META];

impl Rwbs {
    /// An op with no flags.
    pub fn plain(op: Op) -> Rwbs {
        Rwbs {
            preflush: false,
            op,
            fua: false,
            readahead: false,
            sync: false,
            meta: false,
        }
    }

    /// One small integer per RWBS: a column of them is a lookup into at most 128 strings.
    pub fn code(self) -> u8 {
        let flag = |set: bool, bit: u8| if set { bit } else { 0 };
        flag(self.preflush, PREFLUSH)
            | (self.op.index() << OP_SHIFT)
            | flag(self.fua, FUA)
            | flag(self.readahead, READAHEAD)
            | flag(self.sync, SYNC)
            | flag(self.meta, META)
    }

    /// The RWBS text of a code (the inverse of `code`).
    pub fn from_code(code: u8) -> Rwbs {
        Rwbs {
            preflush: code & PREFLUSH != 0,
            op: Op::ALL[usize::from((code >> OP_SHIFT) & 3)],
            fua: code & FUA != 0,
            readahead: code & READAHEAD != 0,
            sync: code & SYNC != 0,
            meta: code & META != 0,
        }
    }

    /// The text blkparse prints (render_rwbs in event_line.py).
    pub fn text(self) -> String {
        let mut s = String::with_capacity(6);
        for (set, letter) in [
            (self.preflush, "F"),
            (true, self.op.letter()),
            (self.fua, "F"),
            (self.readahead, "A"),
            (self.sync, "S"),
            (self.meta, "M"),
        ] {
            if set {
                s.push_str(letter);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in 0..128u8 {
            assert_eq!(Rwbs::from_code(code).code(), code);
        }
    }

    #[test]
    fn text_is_in_blkparse_letter_order() {
        let rwbs = Rwbs {
            preflush: true,
            op: Op::Write,
            fua: true,
            readahead: false,
            sync: true,
            meta: true,
        };
        assert_eq!(rwbs.text(), "FWFSM");
        assert_eq!(Rwbs::plain(Op::None).text(), "N");
    }

    #[test]
    fn code_bits() {
        // PREFLUSH 1, op << 1 (R W D N), FUA 8, READAHEAD 16, SYNC 32, META 64
        let mut rwbs = Rwbs::plain(Op::Discard);
        assert_eq!(rwbs.code(), 4);
        rwbs.sync = true;
        rwbs.readahead = true;
        assert_eq!(rwbs.code(), 4 | 16 | 32);
        assert_eq!(Op::from_letter(b'N'), Some(Op::None));
        assert_eq!(Op::from_letter(b'X'), None);
        for op in Op::ALL {
            assert_eq!(Op::from_letter(op.letter().as_bytes()[0]), Some(op));
        }
    }

    #[test]
    fn flag_bits_are_the_flags_of_the_columns() {
        for code in 0..128u8 {
            let r = Rwbs::from_code(code);
            let set = FLAG_BITS.map(|bit| code & bit != 0);
            assert_eq!(set, [r.preflush, r.fua, r.readahead, r.sync, r.meta]);
        }
    }
}
