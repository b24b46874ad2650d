//! What the pass keeps between events: the concepts (device, request, bio, piece, plug session,
//! task) and the maps that find them the way the kernel keys them. Each rule is a method of
//! `Pass` in the module named after what it rebuilds (`pairing`, `landing`, `bios`, `plug`,
//! `q2q`, `iodist`), and `process` sends each event to them.

use super::depth::DepthWalk;
use super::event::{Action, Op, Remap};
use super::iodist::IoCounts;
use super::q2q::{LatestQueues, OpClasses};
use super::rows::{BioRow, HeldRequest, RequestLife, RequestRow};
use super::slab::{Id, Slab};
use super::stages::StageCounts;
use crate::hash::FastMap;

/// What the whole trace says about a device (asked of DuckDB before the pass), and its
/// sequential state.
#[derive(Clone, Debug, Default)]
pub struct Device {
    pub major: i64,
    pub minor: i64,
    /// Some D dispatches a request on it (a sector, or a data-less flush): a request-based
    /// device. Without, it is bio-based (device mapper, md): its C's complete bios.
    pub dispatches: bool,
    /// Some bio lands or splits on it (G, M, F, X): without, no Q can land anywhere.
    pub has_bio_nodes: bool,
    pub flush_fifo: FlushFifo,
    /// Where its previous Q and D with a sector and a length ended (io_dist's seeks).
    pub q_end: Option<i64>,
    pub d_end: Option<i64>,
}

/// Data-less flush G's pair with flush D's first in, first out, in runs: a G after a D opens a
/// new run (`landing::fifo_get`).
#[derive(Clone, Debug, Default)]
pub struct FlushFifo {
    pub run: i64,
    pub gets: i64,
    pub dispatches: i64,
    pub last: Option<Action>,
}

/// What requests are paired by: (device, sector, length); a data-less flush has sector -1 and
/// length 0, a C without a length length -1.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PairKey {
    pub dev: usize,
    pub sector: i64,
    pub len: i64,
}

/// The requests of a key's current run, by ordinal (a run holds one at a time, but for two
/// writers of one sector).
#[derive(Clone, Debug, Default)]
pub struct RunRequests {
    first: Option<(i64, Id)>,
    more: Vec<(i64, Id)>,
}

impl RunRequests {
    pub fn get(&self, ordinal: i64) -> Option<Id> {
        match self.first {
            Some((o, g)) if o == ordinal => Some(g),
            _ => self
                .more
                .iter()
                .find(|(o, _)| *o == ordinal)
                .map(|&(_, g)| g),
        }
    }

    pub fn insert(&mut self, ordinal: i64, g: Id) {
        if self.first.is_none() {
            self.first = Some((ordinal, g));
        } else {
            self.more.push((ordinal, g));
        }
    }

    pub fn remove(&mut self, ordinal: i64) -> Option<Id> {
        if let Some((o, g)) = self.first {
            if o == ordinal {
                self.first = self.more.pop();
                return Some(g);
            }
        }
        let at = self.more.iter().position(|(o, _)| *o == ordinal)?;
        Some(self.more.swap_remove(at).1)
    }

    /// Every request of the run, by ordinal; the run holds none after.
    pub fn take_all(&mut self) -> Vec<Id> {
        let mut all: Vec<(i64, Id)> = self.first.take().into_iter().collect();
        all.append(&mut self.more);
        all.sort_unstable();
        all.into_iter().map(|(_, g)| g).collect()
    }
}

/// The D/R/C run of one pair key in flight (`pairing`).
#[derive(Clone, Debug, Default)]
pub struct KeyRun {
    /// The key's previous D, R or C.
    pub prev: Option<Action>,
    /// Requests issued (D) in this run: the n-th D starts the n-th request.
    pub issued: i64,
    /// C's in this run: the n-th C ends the n-th request.
    pub completions: i64,
    /// The highest ordinal a D or R reached.
    pub max_ordinal: i64,
    pub requests: RunRequests,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RequestState {
    /// Its D's, R's and C are still coming.
    Building,
    /// Its C came (or never will): its bios heard of it.
    Done,
    /// Done, but a plug session of one of its bios is still open (`try_emit_request`).
    Waiting,
}

/// A request being rebuilt from its D, R and C events.
#[derive(Clone, Debug)]
pub struct Request {
    pub key: PairKey,
    pub is_flush: bool,
    /// Its first event (by event id): the op and RWBS come from it.
    pub min_eid: Option<i64>,
    pub op: Op,
    pub rwbs: Option<u32>,
    pub life: RequestLife,
    pub d_comm: Option<u32>,
    /// Its C has length 0: the end of a flush sequence.
    pub ends_flush: bool,
    pub state: RequestState,
    /// The pieces that rode in it (a list through `Piece::next_in_request`).
    pub pieces: Option<Id>,
    /// G pieces that take it if their own sector's next D does not come first (a list
    /// through `Piece::next_candidate`).
    pub candidates: Option<Id>,
    /// A flush end's Q: the latest preflush Q on its sector (`pairing::request_done`).
    pub flush_q: Option<i64>,
}

impl Request {
    /// A request of pair key `key` whose first event just came.
    pub fn new(key: PairKey, is_flush: bool) -> Request {
        Request {
            key,
            is_flush,
            min_eid: None,
            op: Op::NoData,
            rwbs: None,
            life: RequestLife::default(),
            d_comm: None,
            ends_flush: false,
            state: RequestState::Building,
            pieces: None,
            candidates: None,
            flush_q: None,
        }
    }
}

/// What a bio whose pieces are all settled still waits for before it is written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wait {
    Nothing,
    /// A preflush bio: the zero-length C that ends its flush sequence.
    FlushEnd,
    /// A bio on a bio-based device: its own C.
    BioCompletion,
}

/// A bio: one Q, followed through its pieces (splits) to the requests they rode in.
#[derive(Clone, Debug)]
pub struct Bio {
    pub dev: usize,
    pub q_eid: i64,
    pub q_t: i64,
    pub op: Op,
    pub rwbs: Option<u32>,
    pub sector: Option<i64>,
    pub nsectors: Option<i64>,
    pub pid: i64,
    pub comm: Option<u32>,
    pub flush: bool,
    /// Pieces whose request is not known yet.
    pub pending: i64,
    pub pieces: i64,
    pub merged: bool,
    /// Some piece was lost, or its request cut by the trace: the bio is partial.
    pub cut: bool,
    pub g_t: Option<i64>,
    pub m_t: Option<i64>,
    pub i_t: Option<i64>,
    pub d_t: Option<i64>,
    pub c_t: Option<i64>,
    pub requeues: Option<i64>,
    pub d_eid: Option<i64>,
    pub remap: Remap,
    /// When its flush sequence ended.
    pub flush_end_t: Option<i64>,
    /// Its own C on a bio-based device.
    pub bio_c_t: Option<i64>,
    pub wait: Wait,
    /// The next bio in the same wait list (flush end or bio-based completion).
    pub next: Option<Id>,
    pub session: Option<Id>,
    /// Its plug session's first Q.
    pub first_q: Option<i64>,
    /// The Q2Q gaps at its Q, per scope (`q2q`).
    pub q2q: [Option<i64>; 4],
    /// Its reporting group's index in `StageCounts` (`q2q_at_queue`).
    pub group: u32,
}

/// Where a G piece stands after its G: waiting for its I, then for its D.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AfterGet {
    Settled,
    WaitingForInsert,
    WaitingForDispatch,
}

/// The first D covering a G piece since it landed: its fallback request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Candidate {
    None,
    /// The D's event id, and its request unless that D was not a request's first.
    Found {
        request: Option<Id>,
        d_eid: i64,
    },
}

/// A piece of a bio: the Q's, and one more per split remainder. It lands on a G (a new
/// request) or an M/F (merged into one), and then learns which request it rode in.
#[derive(Clone, Debug)]
pub struct Piece {
    pub bio: Id,
    /// A head piece not yet landed: its X, if one comes, says it was split.
    pub awaiting_split: bool,
    pub landing: Option<Action>,
    pub land_t: Option<i64>,
    pub sector: Option<i64>,
    pub nsectors: Option<i64>,
    pub pid: Option<i64>,
    pub comm: Option<u32>,
    pub i_t: Option<i64>,
    pub after_get: AfterGet,
    pub candidate: Candidate,
    pub request: Option<Id>,
    pub d_eid: Option<i64>,
    pub next_in_request: Option<Id>,
    pub next_candidate: Option<Id>,
    /// Its place in the covering-D wait list of its block (`landing::cover_wait`).
    pub cover_prev: Option<Id>,
    pub cover_next: Option<Id>,
    pub cover_block: Option<(usize, i64)>,
    pub q_t: i64,
    pub session: Option<Id>,
    pub first_q: Option<i64>,
    /// The plug clock of its G's session.
    pub g_clock: Option<i64>,
    /// Who holds it: its bio, a request it rode in, a request it is a candidate of.
    pub refs: i64,
    /// Its request is known (or it is known to have none).
    pub settled: bool,
    /// A G piece whose own sector's next D may still come (before its candidate's C).
    pub on_own_sector: bool,
}

/// A plug session of a task (`plug`).
#[derive(Clone, Debug, Default)]
pub struct Session {
    /// Its task's pid.
    pub pid: i64,
    pub first_q: Option<i64>,
    pub first_q_or_g: Option<i64>,
    pub plugged: bool,
    pub closed: bool,
    pub refs: i64,
}

/// A submitting task's plug state (`plug`).
#[derive(Clone, Debug)]
pub struct Task {
    pub session: Id,
    pub last_action: Action,
    pub last_t: i64,
    /// Its last event was a U or UT right after a U: the next event says whether that opened
    /// a session of its own.
    pub pending_unplug: bool,
}

/// A D at the current nanosecond: a piece landing at that same time, logged after it, may be
/// covered by it (`landing::cover_wait`).
#[derive(Clone, Copy, Debug)]
pub struct DispatchNow {
    pub dev: usize,
    pub eid: i64,
    pub sector: i64,
    pub nsectors: i64,
    pub request: Option<Id>,
}

/// At most this many D's of one nanosecond are remembered.
pub const DISPATCHES_NOW: usize = 256;

/// (device, sector): how the kernel finds what is in flight at a sector; sector -1 when the
/// event has none.
pub type At = (usize, i64);

/// The whole pass.
pub struct Pass {
    pub plug_clock: bool,
    pub devices: Vec<Device>,
    pub now: Option<i64>,
    pub dispatched_now: Vec<DispatchNow>,

    pub requests: Slab<Request>,
    pub key_runs: FastMap<PairKey, KeyRun>,
    /// Requests done but waiting for a plug session, in the order they finished.
    pub deferred: Vec<Id>,

    pub bios: Slab<Bio>,
    pub pieces: Slab<Piece>,
    pub sessions: Slab<Session>,
    pub tasks: FastMap<i64, Task>,
    /// The time of each task's last P in the trace (asked of DuckDB before the pass; None: not
    /// told, any task may plug at any time): after it, the task's sessions stay unplugged.
    pub last_plugs: Option<FastMap<i64, i64>>,

    /// The piece waiting for the next node (Q G M F X) on its start sector.
    pub chain: FastMap<At, Id>,
    /// The G piece waiting for the next G, I or D on its sector.
    pub after_get: FastMap<At, Id>,
    /// Pieces waiting for a covering D, listed per (device, block of 4096 sectors).
    pub cover: FastMap<(usize, i64), Id>,
    /// Data-less flush G's by (device, run, n).
    pub flush_fifo: FastMap<(usize, i64, i64), Option<Id>>,
    /// The latest preflush Q per sector.
    pub flush_q: FastMap<At, i64>,
    /// The latest flush end (zero-length C) per sector.
    pub last_flush_end: FastMap<At, i64>,
    /// Preflush bios waiting for their flush end, per sector (a list through `Bio::next`).
    pub flush_end_wait: FastMap<At, Id>,
    /// A's waiting for their Q.
    pub remaps: FastMap<At, Remap>,
    /// Bios of bio-based devices waiting for their C, per (device, sector, length).
    pub bio_wait: FastMap<(usize, i64, i64), Id>,

    pub latest_queues: LatestQueues,
    pub op_classes: OpClasses,
    pub io: IoCounts,
    pub depth: DepthWalk,
    pub stage_counts: StageCounts,

    /// Rows written, waiting to become columns (handover.rs: a few chunks at a time).
    pub request_rows: Vec<RequestRow>,
    /// Requests without D whose kind waits for the orphan verdict (after the pass).
    pub held: Vec<HeldRequest>,
    /// Bios written, waiting as `request_rows` do.
    pub bio_rows: Vec<BioRow>,
}

impl Pass {
    /// A pass over the given devices (in the order of their indexes).
    pub fn new(plug_clock: bool, devices: Vec<Device>, depth: DepthWalk) -> Pass {
        let io = IoCounts::new(devices.len());
        Pass {
            plug_clock,
            devices,
            now: None,
            dispatched_now: Vec::with_capacity(DISPATCHES_NOW),
            requests: Slab::default(),
            key_runs: FastMap::default(),
            deferred: Vec::new(),
            bios: Slab::default(),
            pieces: Slab::default(),
            sessions: Slab::default(),
            tasks: FastMap::default(),
            last_plugs: None,
            chain: FastMap::default(),
            after_get: FastMap::default(),
            cover: FastMap::default(),
            flush_fifo: FastMap::default(),
            flush_q: FastMap::default(),
            last_flush_end: FastMap::default(),
            flush_end_wait: FastMap::default(),
            remaps: FastMap::default(),
            bio_wait: FastMap::default(),
            latest_queues: LatestQueues::default(),
            op_classes: OpClasses::default(),
            io,
            depth,
            stage_counts: StageCounts::default(),
            request_rows: Vec::new(),
            held: Vec::new(),
            bio_rows: Vec::new(),
        }
    }
}

/// The smaller of two optional values; None only when both are.
#[inline]
pub fn min_some(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The larger of two optional values; None only when both are.
#[inline]
pub fn max_some(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}
