//! The events as the pass reads them: one row of `events.parquet`, with its strings turned into
//! small codes (the dictionaries are in `arrow_in`).

/// The actions the pass follows (blkparse's letters); the others (m, S, T, B, ...) it skips.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Action {
    /// Q: a bio is queued (the block layer hears of it).
    Queue,
    /// G: a new request is allocated for a bio.
    GetRequest,
    /// I: a request is inserted into the scheduler.
    Insert,
    /// D: a request is issued to the driver.
    Dispatch,
    /// C: a request (or, on a bio-based device, a bio) completes.
    Complete,
    /// M: a bio is back-merged into a request.
    BackMerge,
    /// F: a bio is front-merged into a request.
    FrontMerge,
    /// X: a bio is split; the remainder starts at the split sector.
    Split,
    /// A: the next Q on this sector was remapped from another device.
    Remap,
    /// R: a request is requeued (it will be dispatched again).
    Requeue,
    /// P: the task plugs.
    Plug,
    /// U: the task unplugs.
    Unplug,
    /// UT: the task unplugs on a timer (or because it schedules).
    UnplugTimer,
}

impl Action {
    /// The action of a blkparse letter, None for those the pass skips.
    pub fn from_letters(letters: &str) -> Option<Action> {
        Some(match letters {
            "Q" => Action::Queue,
            "G" => Action::GetRequest,
            "I" => Action::Insert,
            "D" => Action::Dispatch,
            "C" => Action::Complete,
            "M" => Action::BackMerge,
            "F" => Action::FrontMerge,
            "X" => Action::Split,
            "A" => Action::Remap,
            "R" => Action::Requeue,
            "P" => Action::Plug,
            "U" => Action::Unplug,
            "UT" => Action::UnplugTimer,
            _ => return None,
        })
    }

    /// G, M or F: where a queued piece lands (a new request, or merged into one).
    pub fn lands(self) -> bool {
        matches!(
            self,
            Action::GetRequest | Action::BackMerge | Action::FrontMerge
        )
    }

    /// P, U or UT: an event only the plug clock hears of (it has no sector).
    pub fn plugs(self) -> bool {
        matches!(self, Action::Plug | Action::Unplug | Action::UnplugTimer)
    }

    /// U or UT.
    pub fn unplugs(self) -> bool {
        matches!(self, Action::Unplug | Action::UnplugTimer)
    }
}

/// An IO's op: events.op is R, W, D or N; `requests` also has F, a data-less flush's op.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum Op {
    Read = 0,
    Write = 1,
    Discard = 2,
    NoData = 3,
    Flush = 4,
}

impl Op {
    /// The names, in the order of the codes (`requests.op`, `bios.op`).
    pub const NAMES: [&'static str; 5] = ["R", "W", "D", "N", "F"];

    /// events.op's letter (anything but R, W or D is N).
    pub fn from_letter(letter: &str) -> Op {
        match letter {
            "R" => Op::Read,
            "W" => Op::Write,
            "D" => Op::Discard,
            _ => Op::NoData,
        }
    }

    pub fn name(self) -> &'static str {
        Op::NAMES[self as usize]
    }
}

/// Where the next Q on a sector came from (an A event's remap columns, each nullable).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Remap {
    pub major: Option<i64>,
    pub minor: Option<i64>,
    pub sector: Option<i64>,
}

/// One event: `events.parquet`'s columns the pass reads. Strings are codes of the pass's own
/// dictionaries (`rwbs`, `comm`); the device is an index into the pass's devices.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Event {
    pub t: i64,
    /// input_id << 40 | line_no: unique, and the order of events at one nanosecond.
    pub eid: i64,
    pub dev: usize,
    pub action: Action,
    pub op: Op,
    /// RWBS has F before the op (a preflush) or is a data-less flush (FN).
    pub flush: bool,
    pub rwbs: Option<u32>,
    pub sector: Option<i64>,
    pub nsectors: Option<i64>,
    /// X: where the remainder starts.
    pub split: Option<i64>,
    pub remap: Remap,
    pub error: Option<i64>,
    pub pid: i64,
    pub comm: Option<u32>,
}

impl Event {
    /// A data-less flush (D FN, C FN): its own request, paired apart from any sector.
    pub fn is_dataless_flush(&self) -> bool {
        self.flush && self.op == Op::NoData
    }

    /// The sector as the pass's keys take it: -1 when the event has none.
    pub fn key_sector(&self) -> i64 {
        self.sector.unwrap_or(-1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_name_the_actions_the_pass_follows() {
        assert_eq!(Action::from_letters("UT"), Some(Action::UnplugTimer));
        assert_eq!(Action::from_letters("m"), None);
        assert_eq!(Op::from_letter("FN"), Op::NoData);
        assert_eq!(Op::Flush.name(), "F");
    }
}
