//! Requests: D, R and C paired per (device, sector, length) in time order. A key's events are
//! cut into runs at a D that follows a C (a reuse of the sector); inside a run the n-th issuing
//! D pairs with the n-th C (two writers of one sector: D D C C, seen in the fio_sched capture);
//! an R and the D right after it belong to the latest request issued (a requeue: the LAST D
//! starts D2C). A key is forgotten as soon as nothing of it is in flight.

use super::event::{Action, Event, Op};
use super::rows::{HeldRequest, RequestKind, RequestRow};
use super::slab::Id;
use super::state::{max_some, min_some, Candidate, KeyRun, PairKey, Pass, Request, RequestState};

impl Pass {
    /// The key a D, R or C pairs on: a data-less flush pairs apart from any sector.
    pub fn pair_key(ev: &Event) -> PairKey {
        if ev.is_dataless_flush() {
            PairKey {
                dev: ev.dev,
                sector: -1,
                len: 0,
            }
        } else {
            PairKey {
                dev: ev.dev,
                sector: ev.key_sector(),
                len: ev.nsectors.unwrap_or(-1),
            }
        }
    }

    /// Pair one D, R or C into its request. Returns the request of a D that is its first D
    /// (the covering and FIFO rules link pieces to it), else None; and whether a C's request
    /// had no D (the depth walk's boundary: its request may be an orphan or began before the
    /// trace, settled after the pass).
    pub fn pair_event(&mut self, ev: &Event) -> (Option<Id>, bool) {
        let a = ev.action;
        let key = Pass::pair_key(ev);
        let run = self.key_runs.entry(key).or_default();
        let mut cut = Vec::new();
        if a == Action::Dispatch && run.prev == Some(Action::Complete) {
            // a D after a C starts a new run: a reuse of the sector
            cut = run.requests.take_all();
            run.issued = 0;
            run.completions = 0;
            run.max_ordinal = 0;
        }
        let run = if cut.is_empty() {
            run // one lookup of the key, unless requests were cut
        } else {
            for g in cut {
                self.request_done(g);
            }
            self.key_runs.get_mut(&key).expect("the key's run")
        };
        let ordinal = if a == Action::Complete {
            run.completions += 1;
            run.completions
        } else if a == Action::Requeue || run.prev == Some(Action::Requeue) {
            // an R, and the D right after it (the requeued request dispatched again), belong
            // to the latest request issued on the key
            run.issued.max(1)
        } else {
            run.issued += 1;
            run.issued
        };
        let g = match run.requests.get(ordinal) {
            Some(g) => g,
            None => {
                let g = self
                    .requests
                    .insert(Request::new(key, ev.is_dataless_flush()));
                run.requests.insert(ordinal, g);
                g
            }
        };
        run.prev = Some(a);
        if a != Action::Complete {
            run.max_ordinal = run.max_ordinal.max(ordinal);
        }
        let r = &mut self.requests[g];
        if r.min_eid.is_none_or(|m| ev.eid < m) {
            r.min_eid = Some(ev.eid);
            r.op = ev.op;
            r.rwbs = ev.rwbs;
        }
        match a {
            Action::Dispatch => {
                r.life.first_d = min_some(r.life.first_d, Some(ev.t));
                r.life.last_d = max_some(r.life.last_d, Some(ev.t));
                r.life.dispatches += 1;
                if r.life.d_eid.is_none() {
                    r.life.d_eid = Some(ev.eid);
                    r.d_comm = ev.comm;
                    return (Some(g), false);
                }
                (None, false)
            }
            Action::Requeue => {
                r.life.requeues += 1;
                (None, false)
            }
            _ => {
                r.life.c_t = Some(ev.t);
                r.life.c_eid = Some(ev.eid);
                r.life.error = ev.error;
                if !ev.is_dataless_flush() && ev.nsectors == Some(0) {
                    r.ends_flush = true; // a zero-length C ends a flush sequence
                }
                let without_d = r.life.d_eid.is_none();
                run.requests.remove(ordinal);
                if run.completions >= run.max_ordinal {
                    self.key_runs.remove(&key); // nothing of this key in flight: forget it
                }
                self.request_done(g);
                (None, without_d)
            }
        }
    }

    /// Every request of the key's current run is over (the trace end): those without a C were
    /// cut.
    pub fn close_run(&mut self, run: &mut KeyRun) {
        for g in run.requests.take_all() {
            self.request_done(g);
        }
    }

    /// Request g has its completion (or never will): settle the bios that rode in it, then
    /// write it once the plug clocks it needs are final.
    pub fn request_done(&mut self, g: Id) {
        let r = &mut self.requests[g];
        r.state = RequestState::Done;
        if r.ends_flush {
            let at = (r.key.dev, r.key.sector);
            r.flush_q = self.flush_q.get(&at).copied();
        }
        // G pieces still waiting to see whether their own sector's next D comes: this
        // covering request completed first, so they rode in it
        let mut p = self.requests[g].candidates.take();
        while let Some(pid) = p {
            let piece = &mut self.pieces[pid];
            let next = piece.next_candidate;
            let is_mine =
                matches!(piece.candidate, Candidate::Found { request: Some(c), .. } if c == g);
            if piece.on_own_sector && is_mine && !piece.settled {
                if let Candidate::Found { d_eid, .. } = piece.candidate {
                    piece.d_eid = Some(d_eid);
                }
                piece.on_own_sector = false;
                piece.request = Some(g);
                piece.next_in_request = self.requests[g].pieces;
                piece.refs += 1;
                self.requests[g].pieces = Some(pid);
            }
            self.piece_release(pid);
            p = next;
        }
        let mut p = self.requests[g].pieces;
        while let Some(pid) = p {
            self.settle_piece(pid, Some(g));
            p = self.pieces[pid].next_in_request;
        }
        if !self.try_emit_request(g) {
            self.requests[g].state = RequestState::Waiting;
            self.deferred.push(g);
        }
    }

    /// A request is partial when the trace cut it: no C, or a C without any D (it began
    /// before the trace) unless it ends a flush sequence or is a bio-based device's.
    pub fn request_partial(&self, g: Id) -> bool {
        let r = &self.requests[g];
        if r.life.c_t.is_none() {
            return true;
        }
        if r.life.d_eid.is_none() {
            return !r.ends_flush && self.devices[r.key.dev].dispatches;
        }
        false
    }

    /// Write request g's row, unless a plug session of one of its bios may still get a P (its
    /// clock would move to the session's first Q: `session_plugged`); return whether written.
    /// Its process, pid and G time are the earliest G's that rode in it; its accounting start
    /// is the plug clock (Linux >= 6.9: the later of its bios' Q clock and its G's session
    /// clock), else its G, else its first Q.
    pub fn try_emit_request(&mut self, g: Id) -> bool {
        let mut q_t = None;
        let (mut g_t, mut g_pid, mut g_comm, mut g_clock) = (None, None, None, None);
        let mut q_clock = None;
        let mut p = self.requests[g].pieces;
        while let Some(pid) = p {
            let piece = &self.pieces[pid];
            q_t = min_some(q_t, Some(piece.q_t));
            if self.plug_clock {
                let s = piece.session.expect("a plug-clock piece has a session");
                match self.session_plugged(s) {
                    Some(true) => q_clock = min_some(q_clock, piece.first_q),
                    Some(false) => q_clock = min_some(q_clock, Some(piece.q_t)),
                    None => return false,
                }
            }
            if piece.landing == Some(Action::GetRequest)
                && g_t.is_none_or(|gt| piece.land_t.is_some_and(|lt| lt < gt))
            {
                g_t = piece.land_t;
                g_pid = piece.pid;
                g_comm = piece.comm;
                g_clock = piece.g_clock;
            }
            p = piece.next_in_request;
        }
        let r = &self.requests[g];
        let dev = r.key.dev;
        let mut fix = None;
        let kind = if r.is_flush {
            RequestKind::Flush
        } else if r.ends_flush {
            RequestKind::FlushEnd
        } else if !self.devices[dev].dispatches {
            RequestKind::Bio
        } else {
            if r.life.d_eid.is_none() {
                fix = r.min_eid; // 'orphan' if its key had an earlier run: settled afterwards
            }
            RequestKind::Data
        };
        let flush_q = if kind == RequestKind::FlushEnd {
            r.flush_q
        } else {
            None
        };
        let q_time = q_t.or(flush_q);
        let acct_start = if self.plug_clock {
            max_some(q_clock, g_clock).or(q_time)
        } else {
            g_t.or(q_time)
        };
        let row = RequestRow {
            dev,
            op: if r.is_flush { Op::Flush } else { r.op },
            sector: (!r.is_flush && r.key.sector >= 0).then_some(r.key.sector),
            nsectors: (r.key.len >= 0).then_some(r.key.len),
            kind,
            rwbs: r.rwbs,
            q_t: q_time,
            g_t,
            acct_start,
            life: r.life,
            partial: self.request_partial(g),
            pid: g_pid,
            process: g_comm.or(r.d_comm),
        };
        // the row is built in its place among the rows, then read there
        let row = match fix {
            Some(eid) => {
                self.held.push(HeldRequest {
                    fix_t: row.life.c_t.or(row.life.first_d),
                    eid,
                    row,
                });
                &self.held.last().expect("the row just held").row
            }
            None => {
                self.request_rows.push(row);
                self.request_rows.last().expect("the row just written")
            }
        };
        self.depth.request_written(row);
        let mut p = self.requests[g].pieces;
        while let Some(pid) = p {
            let next = self.pieces[pid].next_in_request;
            self.piece_release(pid);
            p = next;
        }
        self.requests.discard(g);
        true
    }

    /// Requests waiting for plug sessions: write those whose sessions are now final.
    pub fn retry_deferred(&mut self) {
        let waiting = std::mem::take(&mut self.deferred);
        for g in waiting {
            if !self.try_emit_request(g) {
                self.deferred.push(g);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::{Action::*, Op};
    use super::super::rows::RequestKind;
    use super::super::testing::{bare, device, ev, Trace};

    #[test]
    fn a_dispatch_after_a_completion_starts_a_new_run_on_the_sector() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Dispatch, 8, 8),
            ev(Complete, 8, 8),
            ev(Dispatch, 8, 8),
            ev(Complete, 8, 8),
        ]);
        trace.finish();
        let rows = trace.requests();
        let lives: Vec<_> = rows.iter().map(|r| (r.life.first_d, r.life.c_t)).collect();
        assert_eq!(lives, vec![(Some(1), Some(2)), (Some(3), Some(4))]);
        assert!(rows
            .iter()
            .all(|r| !r.partial && r.kind == RequestKind::Data));
    }

    #[test]
    fn the_same_sector_on_two_devices_pairs_apart() {
        let mut trace = Trace::new(vec![device(true, true), device(true, true)], false);
        trace.run(&[
            ev(Dispatch, 8, 8),
            ev(Dispatch, 8, 8).on(1),
            ev(Complete, 8, 8).on(1),
            ev(Complete, 8, 8),
        ]);
        trace.finish();
        let lives: Vec<_> = trace
            .requests()
            .iter()
            .map(|r| (r.dev, r.life.first_d, r.life.c_t))
            .collect();
        assert_eq!(lives, vec![(1, Some(2), Some(3)), (0, Some(1), Some(4))]);
    }

    #[test]
    fn the_nth_dispatch_pairs_with_the_nth_completion() {
        // two writers of one sector: D D C C (the fio_sched capture)
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Dispatch, 8, 8),
            ev(Dispatch, 8, 8),
            ev(Complete, 8, 8),
            ev(Complete, 8, 8),
        ]);
        trace.finish();
        let lives: Vec<_> = trace
            .requests()
            .iter()
            .map(|r| (r.life.first_d, r.life.c_t))
            .collect();
        assert_eq!(lives, vec![(Some(1), Some(3)), (Some(2), Some(4))]);
    }

    #[test]
    fn a_requeued_request_starts_d2c_at_its_last_dispatch() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Dispatch, 8, 8),
            ev(Requeue, 8, 8),
            ev(Dispatch, 8, 8),
            ev(Complete, 8, 8),
        ]);
        trace.finish();
        let r = &trace.requests()[0];
        assert_eq!(
            (r.life.first_d, r.life.last_d, r.life.c_t),
            (Some(1), Some(3), Some(4))
        );
        assert_eq!((r.life.dispatches, r.life.requeues), (2, 1));
    }

    #[test]
    fn a_completion_without_dispatch_waits_for_the_orphan_verdict() {
        // in its key's first run it began before the trace; in a later one it is an orphan:
        // DuckDB tells which after the pass, from the key's events
        let mut trace = Trace::plain();
        trace.run(&[ev(Complete, 8, 8), ev(Dispatch, 16, 8)]);
        trace.finish();
        let held = &trace.pass.held;
        assert_eq!(held.len(), 1);
        assert_eq!((held[0].eid, held[0].fix_t), (1, Some(1)));
        assert!(held[0].row.partial);
        // a D without C was cut by the trace end
        let cut = &trace.pass.request_rows[0];
        assert_eq!(
            (cut.life.first_d, cut.life.c_t, cut.partial),
            (Some(2), None, true)
        );
    }

    #[test]
    fn a_dataless_flush_pairs_on_its_own_key_and_a_zero_length_completion_ends_a_sequence() {
        let mut trace = Trace::plain();
        trace.run(&[
            bare(Dispatch).flush(Op::NoData),
            ev(Dispatch, 8, 8),
            bare(Complete).flush(Op::NoData),
            ev(Complete, 8, 8),
            ev(Complete, 8, 0),
        ]);
        trace.finish();
        let flush = &trace.requests_of(RequestKind::Flush)[0];
        assert_eq!(
            (flush.op, flush.sector, flush.nsectors),
            (Op::Flush, None, Some(0))
        );
        assert_eq!((flush.life.first_d, flush.life.c_t), (Some(1), Some(3)));
        let end = &trace.requests_of(RequestKind::FlushEnd)[0];
        assert_eq!(
            (end.sector, end.life.c_t, end.partial),
            (Some(8), Some(5), false)
        );
    }

    #[test]
    fn a_flush_end_takes_the_latest_preflush_queued_on_its_sector() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Queue, 100, 8).flush(Op::Write),
            ev(Queue, 100, 8).flush(Op::Write),
            ev(Complete, 100, 0),
        ]);
        trace.finish();
        assert_eq!(trace.requests_of(RequestKind::FlushEnd)[0].q_t, Some(2));
    }

    #[test]
    fn a_request_takes_its_process_and_g_time_from_its_earliest_g() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Queue, 8, 8).pid(7),
            ev(GetRequest, 8, 8).pid(7),
            ev(Queue, 16, 8).pid(9),
            ev(BackMerge, 16, 8).pid(9),
            ev(Insert, 8, 16),
            ev(Dispatch, 8, 16),
            ev(Complete, 8, 16),
        ]);
        trace.finish();
        let r = &trace.requests()[0];
        assert_eq!(
            (r.pid, r.g_t, r.q_t, r.acct_start),
            (Some(7), Some(2), Some(1), Some(2))
        );
    }
}
