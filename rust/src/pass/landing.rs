//! Which request each piece rode in. The node after a Q on its start sector says where it went
//! (G: a new request, M/F: merged into one, X: split, another Q: lost unseen); a G's request is
//! the next D on its sector, via its I; merged pieces, and G's whose request lost its start to a
//! front merge, take the first later D covering them (btt's rule, in time order); data-less
//! flush G's pair with flush D's first in, first out.

use std::collections::hash_map::Entry;

use super::event::{Action, Event};
use super::slab::Id;
use super::state::{min_some, AfterGet, At, Candidate, DispatchNow, Pass, DISPATCHES_NOW};

/// Pieces wait for a covering D in lists per block of this many sectors (as a power of two):
/// a D looks only at the blocks its range touches.
const COVER_BLOCK_BITS: u32 = 12;

impl Pass {
    /// A node (Q G M F X, or None: a split's remainder starting) on (device, start sector):
    /// it is what happened next to the piece waiting there. Returns (the piece landing on this
    /// G/M/F, the piece this X splits).
    pub fn chain_node(&mut self, at: At, node: Option<Action>) -> (Option<Id>, Option<Id>) {
        let Entry::Occupied(waiting) = self.chain.entry(at) else {
            return (None, None);
        };
        let w = *waiting.get();
        if self.pieces[w].awaiting_split && node == Some(Action::Split) {
            self.pieces[w].awaiting_split = false; // the head lands on the node after the X
            return (None, Some(w));
        }
        waiting.remove();
        if node.is_some_and(Action::lands) {
            return (Some(w), None);
        }
        self.lose(w); // a Q or a remainder start came first: the piece was re-queued unseen
        (None, None)
    }

    /// Piece p landed on this G (a new request, on the plug clock `g_clock`) or M/F (merged
    /// into an existing one): a G waits for the next D on its sector, a merged piece (and a G
    /// whose request may lose its start to a front merge) for the first D covering it.
    pub fn land(&mut self, p: Id, ev: &Event, g_clock: Option<i64>) {
        let piece = &mut self.pieces[p];
        let b = piece.bio;
        piece.landing = Some(ev.action);
        piece.land_t = Some(ev.t);
        piece.sector = ev.sector;
        piece.nsectors = ev.nsectors;
        piece.pid = Some(ev.pid);
        piece.comm = ev.comm;
        if ev.action == Action::GetRequest {
            piece.g_clock = g_clock;
            piece.after_get = AfterGet::WaitingForInsert;
            let bio = &mut self.bios[b];
            bio.g_t = min_some(bio.g_t, Some(ev.t));
            self.after_get.insert((ev.dev, ev.key_sector()), p);
            if ev.sector.is_some() {
                self.pieces[p].on_own_sector = true;
                self.cover_wait(p, ev.dev);
            }
        } else {
            let bio = &mut self.bios[b];
            bio.m_t = min_some(bio.m_t, Some(ev.t));
            bio.merged = true;
            if ev.sector.is_some() {
                self.cover_wait(p, ev.dev);
            } else {
                self.settle_piece(p, None);
            }
        }
    }

    /// Piece p rode in the request whose first D is `d_eid` (request g; None: no request was
    /// built from that D).
    pub fn link(&mut self, p: Id, d_eid: i64, g: Option<Id>) {
        let piece = &mut self.pieces[p];
        piece.d_eid = Some(d_eid);
        piece.on_own_sector = false;
        self.cover_leave(p);
        let building = g.filter(|&g| {
            self.requests.contains(g)
                && self.requests[g].state == super::state::RequestState::Building
        });
        match building {
            Some(g) => {
                let piece = &mut self.pieces[p];
                piece.request = Some(g);
                piece.next_in_request = self.requests[g].pieces;
                piece.refs += 1;
                self.requests[g].pieces = Some(p);
            }
            None => self.settle_piece(p, None),
        }
    }

    /// A G, I or D on (device, sector): the next event after the G piece waiting there. Its I
    /// is noted; its D is its request's; any other event there means a front merge moved its
    /// request's start, and its covering D's request (if one came) is its own.
    pub fn after_get_event(&mut self, at: At, ev: &Event, request: Option<Id>) {
        let Entry::Occupied(waiting) = self.after_get.entry(at) else {
            return;
        };
        let p = *waiting.get();
        let piece = &mut self.pieces[p];
        if piece.after_get == AfterGet::WaitingForInsert && ev.action == Action::Insert {
            piece.i_t = Some(ev.t);
            piece.after_get = AfterGet::WaitingForDispatch;
            return;
        }
        waiting.remove();
        piece.after_get = AfterGet::Settled;
        if piece.sector.is_none() {
            return; // a data-less flush G: the flush FIFO says which D
        }
        if ev.action == Action::Dispatch {
            self.link(p, ev.eid, request);
        } else {
            piece.on_own_sector = false;
            if let Candidate::Found { request, d_eid } = piece.candidate {
                self.link(p, d_eid, request);
            }
        }
    }

    /// D `d_eid` (the first D of `request`, if any) is the first D covering piece p since it
    /// landed: its request, or for a G still waiting for its own sector's D, its fallback.
    fn cover_found(&mut self, p: Id, d_eid: i64, request: Option<Id>) {
        self.cover_leave(p);
        if self.pieces[p].on_own_sector {
            let piece = &mut self.pieces[p];
            piece.candidate = Candidate::Found { request, d_eid };
            if let Some(g) = request {
                piece.next_candidate = self.requests[g].candidates;
                piece.refs += 1;
                self.requests[g].candidates = Some(p);
            }
        } else {
            self.link(p, d_eid, request);
        }
    }

    /// Piece p (merged, or a G that may lose its request's start to a front merge) waits for
    /// the first D on its device covering it (btt's rule, in time order). A D at this very
    /// nanosecond, logged just before, already covers it.
    pub fn cover_wait(&mut self, p: Id, dev: usize) {
        let sector = self.pieces[p]
            .sector
            .expect("a covering D is waited for by sector");
        let n = self.pieces[p].nsectors.unwrap_or(-1);
        let now = self
            .dispatched_now
            .iter()
            .find(|d| d.dev == dev && d.sector <= sector && d.sector + d.nsectors >= sector + n)
            .copied();
        if let Some(d) = now {
            let request = d.request.filter(|&g| {
                self.requests.contains(g) && self.requests[g].life.d_eid == Some(d.eid)
            });
            self.cover_found(p, d.eid, request);
            return;
        }
        let block = (dev, sector >> COVER_BLOCK_BITS);
        let head = self.cover.insert(block, p);
        let piece = &mut self.pieces[p];
        piece.cover_prev = None;
        piece.cover_next = head;
        piece.cover_block = Some(block);
        if let Some(h) = head {
            self.pieces[h].cover_prev = Some(p);
        }
    }

    /// Take piece p out of its covering-D wait list, if it is in one.
    pub fn cover_leave(&mut self, p: Id) {
        let piece = &mut self.pieces[p];
        let Some(block) = piece.cover_block.take() else {
            return;
        };
        let (prev, next) = (piece.cover_prev, piece.cover_next);
        match (prev, next) {
            (Some(prev), _) => self.pieces[prev].cover_next = next,
            (None, Some(next)) => {
                self.cover.insert(block, next);
            }
            (None, None) => {
                self.cover.remove(&block);
            }
        }
        if let Some(next) = next {
            self.pieces[next].cover_prev = prev;
        }
    }

    /// A D (the first of `request`, if any) on the device: it covers every waiting piece
    /// inside its range, and any piece landing later at this same nanosecond.
    pub fn cover_dispatch(&mut self, ev: &Event, request: Option<Id>) {
        let (sector, n) = (ev.key_sector(), ev.nsectors.unwrap_or(-1));
        for block in (sector >> COVER_BLOCK_BITS)..=((sector + n) >> COVER_BLOCK_BITS) {
            let mut p = self.cover.get(&(ev.dev, block)).copied();
            while let Some(pid) = p {
                let piece = &self.pieces[pid];
                p = piece.cover_next;
                let ps = piece.sector.expect("a waiting piece has a sector");
                if sector <= ps && sector + n >= ps + piece.nsectors.unwrap_or(-1) {
                    self.cover_found(pid, ev.eid, request);
                }
            }
        }
        if self.dispatched_now.len() < DISPATCHES_NOW {
            self.dispatched_now.push(DispatchNow {
                dev: ev.dev,
                eid: ev.eid,
                sector,
                nsectors: n,
                request,
            });
        }
    }

    /// A data-less flush G (its piece, if one landed): next in its device's flush FIFO. A G
    /// after a D opens a new run; the previous run's G's no D took are settled without one.
    pub fn fifo_get(&mut self, dev: usize, p: Option<Id>) {
        let fifo = &self.devices[dev].flush_fifo;
        if fifo.last == Some(Action::Dispatch) {
            let run = fifo.run;
            for n in (fifo.dispatches + 1)..=fifo.gets {
                if let Some(Some(left)) = self.flush_fifo.remove(&(dev, run, n)) {
                    self.settle_piece(left, None);
                }
            }
            let fifo = &mut self.devices[dev].flush_fifo;
            fifo.run = run + 1;
            fifo.gets = 0;
            fifo.dispatches = 0;
        }
        let fifo = &mut self.devices[dev].flush_fifo;
        fifo.gets += 1;
        let at = (dev, fifo.run, fifo.gets);
        fifo.last = Some(Action::GetRequest);
        self.flush_fifo.insert(at, p);
    }

    /// A data-less flush D: the next G of its device's flush FIFO rode in its request.
    pub fn fifo_dispatch(&mut self, dev: usize, d_eid: i64, request: Option<Id>) {
        let fifo = &mut self.devices[dev].flush_fifo;
        fifo.dispatches += 1;
        fifo.last = Some(Action::Dispatch);
        let at = (dev, fifo.run, fifo.dispatches);
        if let Some(Some(p)) = self.flush_fifo.remove(&at) {
            self.link(p, d_eid, request);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::{Action::*, Op};
    use super::super::testing::{bare, ev, split_write, Trace};

    #[test]
    fn a_g_rides_in_the_next_dispatch_on_its_sector_via_its_insert() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Queue, 8, 8),
            ev(GetRequest, 8, 8),
            ev(Insert, 8, 8),
            ev(Dispatch, 8, 8),
            ev(Complete, 8, 8),
        ]);
        trace.finish();
        let bio = &trace.bios()[0];
        assert_eq!(
            (bio.g_t, bio.i_t, bio.d_t, bio.c_t),
            (Some(2), Some(3), Some(4), Some(5))
        );
        assert_eq!(bio.d_eid, Some(4));
        assert!(!bio.merged && !bio.partial);
    }

    #[test]
    fn a_merged_piece_rides_in_the_first_later_dispatch_covering_it() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Queue, 0, 8),
            ev(GetRequest, 0, 8),
            ev(Queue, 8, 8),
            ev(BackMerge, 8, 8),
            ev(Dispatch, 100, 8), // does not cover it
            ev(Dispatch, 0, 16),
            ev(Complete, 100, 8),
            ev(Complete, 0, 16),
        ]);
        trace.finish();
        let merged = &trace.bios()[1];
        assert!(merged.merged);
        assert_eq!(
            (merged.m_t, merged.d_t, merged.c_t),
            (Some(4), Some(6), Some(8))
        );
    }

    #[test]
    fn a_g_whose_request_lost_its_start_to_a_front_merge_takes_its_covering_dispatch() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Queue, 8, 8),
            ev(GetRequest, 8, 8),
            ev(Queue, 0, 8),
            ev(FrontMerge, 0, 8),
            ev(Dispatch, 0, 16),
            ev(Complete, 0, 16),
        ]);
        trace.finish();
        let bios = trace.bios();
        let lives: Vec<_> = bios.iter().map(|b| (b.d_t, b.c_t, b.partial)).collect();
        assert_eq!(lives, vec![(Some(5), Some(6), false); 2]);
    }

    #[test]
    fn dataless_flush_gets_pair_with_flush_dispatches_first_in_first_out() {
        let mut trace = Trace::plain();
        let flush = bare(Queue).flush(Op::NoData);
        trace.run(&[
            flush.pid(1),
            bare(GetRequest).flush(Op::NoData).pid(1),
            flush.pid(2),
            bare(GetRequest).flush(Op::NoData).pid(2),
            bare(Dispatch).flush(Op::NoData),
            bare(Complete).flush(Op::NoData),
            bare(Dispatch).flush(Op::NoData),
            bare(Complete).flush(Op::NoData),
        ]);
        trace.finish();
        let lives: Vec<_> = trace.bios().iter().map(|b| (b.pid, b.d_t, b.c_t)).collect();
        assert_eq!(lives, vec![(1, Some(5), Some(6)), (2, Some(7), Some(8))]);
    }

    #[test]
    fn a_split_remainder_starts_anew_at_the_split_sector_and_may_split_again() {
        let mut trace = Trace::plain();
        trace.run(&split_write(3)); // the remainder at 8 is split again at 16
        trace.finish();
        let bio = &trace.bios()[0];
        assert_eq!((bio.pieces, bio.c_t, bio.partial), (3, Some(12), false));
        assert_eq!(trace.requests().len(), 3);
    }
}
