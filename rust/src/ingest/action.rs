//! The action of a block event: the letter blkparse prints in its sixth column.

/// What happened to an IO, as blkparse names it (blkparse_fmt.c, `act_to_str`). The order is
/// the events table's action codes (event_line.ACTIONS), which the tests hold both readers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Q: a bio is queued.
    Queue,
    /// G: a request is allocated for it.
    GetRequest,
    /// I: the request is inserted into the scheduler.
    Insert,
    /// D: the request is issued to the driver.
    Issue,
    /// C: the request (or bio, on bio-based devices) completes.
    Complete,
    /// M: a bio is merged at the back of a request.
    BackMerge,
    /// F: a bio is merged at the front of a request.
    FrontMerge,
    /// P: the task plugs its queue.
    Plug,
    /// U: the plug is released, with a depth.
    Unplug,
    /// UT: the plug is released by its timer (older kernels).
    UnplugTimer,
    /// X: a bio is split in two.
    Split,
    /// A: a bio is remapped from another device (partitions, device mapper).
    Remap,
    /// R: a request is requeued.
    Requeue,
    /// S: the task sleeps waiting for a request.
    Sleep,
    /// T: an unplug by timer, as older blkparse printed it.
    Timer,
    /// B: a bio is bounced.
    Bounce,
    /// m: a message note (bfq's, for example).
    Message,
}

/// The action of each byte that is one action's letter: a lookup, where a `match` made a jump
/// per letter that the letters, changing row by row, kept mispredicting.
const BY_LETTER: [Option<Action>; 256] = {
    let letters = [
        (b'Q', Action::Queue),
        (b'G', Action::GetRequest),
        (b'I', Action::Insert),
        (b'D', Action::Issue),
        (b'C', Action::Complete),
        (b'M', Action::BackMerge),
        (b'F', Action::FrontMerge),
        (b'P', Action::Plug),
        (b'U', Action::Unplug),
        (b'X', Action::Split),
        (b'A', Action::Remap),
        (b'R', Action::Requeue),
        (b'S', Action::Sleep),
        (b'T', Action::Timer),
        (b'B', Action::Bounce),
        (b'm', Action::Message),
    ];
    let mut table = [None; 256];
    let mut k = 0;
    while k < letters.len() {
        table[letters[k].0 as usize] = Some(letters[k].1);
        k += 1;
    }
    table
};

impl Action {
    /// Every action, in the order of the events table's codes.
    pub const ALL: [Action; 17] = [
        Action::Queue,
        Action::GetRequest,
        Action::Insert,
        Action::Issue,
        Action::Complete,
        Action::BackMerge,
        Action::FrontMerge,
        Action::Plug,
        Action::Unplug,
        Action::UnplugTimer,
        Action::Split,
        Action::Remap,
        Action::Requeue,
        Action::Sleep,
        Action::Timer,
        Action::Bounce,
        Action::Message,
    ];

    /// The letters blkparse prints for the action.
    pub fn letters(self) -> &'static str {
        match self {
            Action::Queue => "Q",
            Action::GetRequest => "G",
            Action::Insert => "I",
            Action::Issue => "D",
            Action::Complete => "C",
            Action::BackMerge => "M",
            Action::FrontMerge => "F",
            Action::Plug => "P",
            Action::Unplug => "U",
            Action::UnplugTimer => "UT",
            Action::Split => "X",
            Action::Remap => "A",
            Action::Requeue => "R",
            Action::Sleep => "S",
            Action::Timer => "T",
            Action::Bounce => "B",
            Action::Message => "m",
        }
    }

    /// The action whose letter is this one byte (UT, the only two-letter one, is not).
    #[inline]
    pub fn from_letter(letter: u8) -> Option<Action> {
        BY_LETTER[usize::from(letter)]
    }

    /// The kernel's action code (`__BLK_TA_*` in blktrace_api.h) -> the action blkparse prints;
    /// None for codes blkparse does not print (drv data, zone ops, ...).
    pub fn from_kernel_code(code: u8) -> Option<Action> {
        Some(match code {
            1 => Action::Queue,
            2 => Action::BackMerge,
            3 => Action::FrontMerge,
            4 => Action::GetRequest,
            5 => Action::Sleep,
            6 => Action::Requeue,
            7 => Action::Issue,
            8 => Action::Complete,
            9 => Action::Plug,
            10 => Action::Unplug,
            11 => Action::UnplugTimer,
            12 => Action::Insert,
            13 => Action::Split,
            14 => Action::Bounce,
            15 => Action::Remap,
            _ => return None,
        })
    }

    /// Whether blkparse prints `sector + count` for the action when the IO has a size
    /// (process_default's first case).
    pub fn prints_sector_plus_count(self) -> bool {
        matches!(
            self,
            Action::Queue
                | Action::GetRequest
                | Action::Insert
                | Action::Issue
                | Action::Bounce
                | Action::BackMerge
                | Action::FrontMerge
                | Action::Sleep
                | Action::Remap
        )
    }

    /// C and R end with the error in brackets instead of the process name.
    pub fn is_completion(self) -> bool {
        matches!(self, Action::Complete | Action::Requeue)
    }

    /// Whether blkparse prints `[comm]` for the action.
    pub fn prints_comm(self) -> bool {
        !matches!(
            self,
            Action::Complete | Action::Requeue | Action::Remap | Action::Message
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_are_unique_and_read_back() {
        for a in Action::ALL {
            if a != Action::UnplugTimer {
                assert_eq!(Action::from_letter(a.letters().as_bytes()[0]), Some(a));
            }
        }
        assert_eq!(Action::from_letter(b'Z'), None);
        let letters = (0..=255u8).filter(|&b| Action::from_letter(b).is_some());
        assert_eq!(
            letters.count(),
            Action::ALL.len() - 1,
            "all but UT, nothing else"
        );
        for (k, a) in Action::ALL.into_iter().enumerate() {
            assert_eq!(
                a as usize, k,
                "a column stores an action as its index in ALL"
            );
        }
    }

    #[test]
    fn kernel_codes_map_to_blkparse_letters() {
        let letters: String = (1..=15)
            .map(|c| Action::from_kernel_code(c).unwrap().letters())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(letters, "Q M F G S R D C P U UT I X B A");
        assert_eq!(Action::from_kernel_code(0), None);
        assert_eq!(Action::from_kernel_code(16), None);
    }

    #[test]
    fn which_actions_print_what() {
        assert!(Action::Remap.prints_sector_plus_count());
        assert!(!Action::Split.prints_sector_plus_count());
        assert!(Action::Requeue.is_completion());
        assert!(!Action::Remap.prints_comm());
        assert!(Action::Unplug.prints_comm());
    }
}
