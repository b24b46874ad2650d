//! Bios and their pieces in flight. A bio is written when every piece knows the request it rode
//! in (or that it was lost); a preflush bio when its flush sequence ended too; a bio on a
//! bio-based device (device mapper, md: Q and C only) when its own C came.

use super::event::{Event, Remap};
use super::rows::BioRow;
use super::slab::Id;
use super::state::{max_some, min_some, AfterGet, Bio, Candidate, Pass, Piece, Wait};

impl Pass {
    /// A bio for this Q, in the task's plug session (if the plug clock is kept).
    pub fn new_bio(&mut self, ev: &Event, session: Option<Id>) -> Id {
        self.bios.insert(Bio {
            dev: ev.dev,
            q_eid: ev.eid,
            q_t: ev.t,
            op: ev.op,
            rwbs: ev.rwbs,
            sector: ev.sector,
            nsectors: ev.nsectors,
            pid: ev.pid,
            comm: ev.comm,
            flush: ev.flush,
            pending: 0,
            pieces: 0,
            merged: false,
            cut: false,
            g_t: None,
            m_t: None,
            i_t: None,
            d_t: None,
            c_t: None,
            requeues: None,
            d_eid: None,
            remap: Remap::default(),
            flush_end_t: None,
            bio_c_t: None,
            wait: Wait::Nothing,
            next: None,
            session,
            first_q: session.and_then(|s| self.sessions[s].first_q),
            q2q: [None; 4],
            group: 0,
        })
    }

    /// A piece of bio b (the Q's own, or a split's remainder): it holds the bio's plug session.
    pub fn new_piece(&mut self, b: Id) -> Id {
        let bio = &mut self.bios[b];
        bio.pieces += 1;
        bio.pending += 1;
        let (q_t, session, first_q) = (bio.q_t, bio.session, bio.first_q);
        if let Some(s) = session {
            self.sessions[s].refs += 1;
        }
        self.pieces.insert(Piece {
            bio: b,
            awaiting_split: true,
            landing: None,
            land_t: None,
            sector: None,
            nsectors: None,
            pid: None,
            comm: None,
            i_t: None,
            after_get: AfterGet::Settled,
            candidate: Candidate::None,
            request: None,
            d_eid: None,
            next_in_request: None,
            next_candidate: None,
            cover_prev: None,
            cover_next: None,
            cover_block: None,
            q_t,
            session,
            first_q,
            g_clock: None,
            refs: 1, // the bio's
            settled: false,
            on_own_sector: false,
        })
    }

    /// One holder of piece p let go of it; the last frees it and its plug session's hold.
    pub fn piece_release(&mut self, p: Id) {
        let piece = &mut self.pieces[p];
        piece.refs -= 1;
        if piece.refs == 0 {
            if let Some(s) = piece.session {
                self.session_release(s);
            }
            self.pieces.discard(p);
        }
    }

    /// Piece p was lost (re-queued unseen, or its device has no node to land on): its bio is
    /// partial.
    pub fn lose(&mut self, p: Id) {
        self.pieces[p].landing = None;
        self.settle_piece(p, None);
    }

    /// Piece p's request is known (g), or it is known to have none: tell its bio. A bio takes
    /// the earliest last-D and the last C of its pieces' requests, and the sum of their
    /// requeues; a piece without a request, or whose request was cut, makes it partial.
    pub fn settle_piece(&mut self, p: Id, g: Option<Id>) {
        if self.pieces[p].settled {
            return;
        }
        self.pieces[p].settled = true;
        let b = self.pieces[p].bio;
        if self.pieces[p].after_get != AfterGet::Settled {
            // no longer waiting for the G, I or D after its G
            let at = (self.bios[b].dev, self.pieces[p].sector.unwrap_or(-1));
            if self.after_get.get(&at) == Some(&p) {
                self.after_get.remove(&at);
            }
            self.pieces[p].after_get = AfterGet::Settled;
        }
        self.cover_leave(p);
        match g {
            Some(g) => {
                let partial = self.request_partial(g);
                let r = &self.requests[g];
                let bio = &mut self.bios[b];
                bio.d_t = min_some(bio.d_t, r.life.last_d);
                bio.c_t = max_some(bio.c_t, r.life.c_t);
                if partial || r.life.c_t.is_none() {
                    bio.cut = true;
                }
                bio.requeues = Some(bio.requeues.unwrap_or(0) + r.life.requeues);
            }
            None => self.bios[b].cut = true,
        }
        let (d_eid, i_t) = (self.pieces[p].d_eid, self.pieces[p].i_t);
        let bio = &mut self.bios[b];
        bio.d_eid = min_some(bio.d_eid, d_eid);
        bio.i_t = min_some(bio.i_t, i_t);
        bio.pending -= 1;
        let done = bio.pending == 0;
        self.piece_release(p); // the bio no longer needs it
        if done {
            self.bio_finish(b);
        }
    }

    /// Every piece of bio b is settled: write it, unless it still waits for the end of its
    /// flush sequence (a preflush bio whose sector's last flush end is not its C) or, on a
    /// bio-based device, for its own C.
    fn bio_finish(&mut self, b: Id) {
        let bio = &self.bios[b];
        let dev = bio.dev;
        if bio.flush && !bio.cut && bio.c_t.is_some() {
            let at = (dev, bio.sector.unwrap_or(-1).max(0));
            if self.last_flush_end.get(&at).copied() == bio.c_t {
                self.bios[b].flush_end_t = self.bios[b].c_t;
            } else {
                let head = self.flush_end_wait.insert(at, b);
                let bio = &mut self.bios[b];
                bio.wait = Wait::FlushEnd;
                bio.next = head;
                return;
            }
        }
        let bio = &self.bios[b];
        if !self.devices[dev].dispatches
            && bio.pieces == 1
            && bio.d_eid.is_none()
            && bio.sector.is_some()
            && bio.bio_c_t.is_none()
        {
            self.bios[b].wait = Wait::BioCompletion;
            return;
        }
        self.emit_bio(b);
    }

    /// A zero-length C ends a flush sequence: the preflush bios on its sector waiting for it
    /// are complete.
    pub fn flush_end(&mut self, at: (usize, i64), t: i64) {
        self.last_flush_end.insert(at, t);
        let mut b = self.flush_end_wait.remove(&at);
        while let Some(bid) = b {
            b = self.bios[bid].next;
            self.bios[bid].flush_end_t = Some(t);
            self.emit_bio(bid);
        }
    }

    /// A C on a bio-based device completes every bio queued on its sector and length.
    pub fn bio_done(&mut self, key: (usize, i64, i64), t: i64) {
        let mut b = self.bio_wait.remove(&key);
        while let Some(bid) = b {
            let bio = &mut self.bios[bid];
            b = bio.next.take();
            bio.bio_c_t = Some(t);
            if bio.wait == Wait::BioCompletion {
                bio.wait = Wait::Nothing;
                self.emit_bio(bid);
            }
        }
    }

    /// Queue bio b, on a bio-based device, to wait for its C.
    pub fn bio_wait_for_completion(&mut self, b: Id) {
        let bio = &self.bios[b];
        let key = (
            bio.dev,
            bio.sector.unwrap_or(-1),
            bio.nsectors.unwrap_or(-1),
        );
        let head = self.bio_wait.insert(key, b);
        self.bios[b].next = head;
    }

    /// Take bio b out of its bio-based completion wait list, if it is in one.
    fn bio_wait_leave(&mut self, b: Id) {
        let bio = &self.bios[b];
        let Some(sector) = bio.sector else {
            return;
        };
        let key = (bio.dev, sector, bio.nsectors.unwrap_or(-1));
        let mut prev: Option<Id> = None;
        let mut x = self.bio_wait.get(&key).copied();
        while let Some(xid) = x {
            let next = self.bios[xid].next;
            if xid == b {
                match (prev, next) {
                    (Some(prev), _) => self.bios[prev].next = next,
                    (None, Some(next)) => {
                        self.bio_wait.insert(key, next);
                    }
                    (None, None) => {
                        self.bio_wait.remove(&key);
                    }
                }
                return;
            }
            prev = Some(xid);
            x = next;
        }
    }

    /// Write bio b's row (a bio-based device's own C completes it, whole) and forget it.
    pub fn emit_bio(&mut self, b: Id) {
        let bio = &self.bios[b];
        let (c, cut) = match bio.bio_c_t {
            Some(own) => (Some(own), false),
            None => (bio.c_t, bio.cut),
        };
        let row = BioRow {
            dev: bio.dev,
            op: bio.op,
            rwbs: bio.rwbs,
            sector: bio.sector,
            nsectors: bio.nsectors,
            pid: bio.pid,
            comm: bio.comm,
            q_t: bio.q_t,
            g_t: bio.g_t,
            m_t: bio.m_t,
            i_t: bio.i_t,
            d_t: bio.d_t,
            c_t: if cut {
                None
            } else {
                max_some(c, bio.flush_end_t)
            },
            d2c: match (cut, c, bio.d_t) {
                (false, Some(c), Some(d)) => Some(c - d),
                _ => None,
            },
            merged: bio.merged,
            pieces: bio.pieces,
            requeues: bio.requeues,
            partial: cut,
            remap: bio.remap,
            q_eid: bio.q_eid,
            d_eid: bio.d_eid,
            q2q: bio.q2q,
            group: bio.group,
        };
        if bio.wait == Wait::BioCompletion || !self.devices[bio.dev].dispatches {
            self.bio_wait_leave(b);
        }
        // the row is built in its place among the rows, then read there
        self.bio_rows.push(row);
        let row = self.bio_rows.last().expect("the row just written");
        if let Some(c) = row.c_t {
            self.depth.bio_completed(c, row.dev);
        }
        self.bios.discard(b);
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::{Action::*, Op};
    use super::super::rows::RequestKind;
    use super::super::testing::{device, ev, split_write, Trace};

    #[test]
    fn a_split_bio_completes_when_its_last_piece_does() {
        let mut trace = Trace::plain();
        trace.run(&split_write(2));
        trace.finish();
        let bio = &trace.bios()[0];
        assert_eq!((bio.pieces, bio.d_t, bio.c_t), (2, Some(5), Some(8)));
        assert_eq!(bio.d2c, Some(3));
        assert!(!bio.partial);
    }

    #[test]
    fn a_preflush_bio_completes_at_the_end_of_its_flush_sequence() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Queue, 100, 8).flush(Op::Write),
            ev(GetRequest, 100, 8),
            ev(Dispatch, 100, 8),
            ev(Complete, 100, 8),
            ev(Complete, 100, 0),
        ]);
        trace.finish();
        let bio = &trace.bios()[0];
        assert_eq!((bio.c_t, bio.d2c, bio.partial), (Some(5), Some(1), false));
    }

    #[test]
    fn a_bio_based_device_completes_each_bio_at_its_own_completion() {
        let mut trace = Trace::new(vec![device(false, false)], false);
        trace.run(&[ev(Queue, 0, 8), ev(Queue, 8, 8), ev(Complete, 8, 8)]);
        trace.finish();
        let bios = trace.bios();
        assert_eq!((bios[0].c_t, bios[0].partial), (None, true));
        assert_eq!((bios[1].c_t, bios[1].partial), (Some(3), false));
        assert_eq!(trace.requests()[0].kind, RequestKind::Bio);
        assert!(!trace.requests()[0].partial);
    }

    #[test]
    fn a_piece_queued_again_unseen_leaves_its_bio_partial() {
        let mut trace = Trace::plain();
        trace.run(&[ev(Queue, 0, 8), ev(Queue, 0, 8)]);
        trace.finish();
        let bios = trace.bios();
        assert_eq!(bios.len(), 2);
        assert!(bios.iter().all(|b| b.partial && b.c_t.is_none()));
    }
}
