//! The pass's event loop: each event, in time order, goes to the rules it matters to; the end
//! of a batch settles what it allows; the trace end writes everything still in flight.

use super::depth::{driver_key, queue_key, Delta};
use super::event::{Action, Event};
use super::slab::Id;
use super::state::{max_some, Pass, Wait};

impl Pass {
    /// Run one event through every rule.
    pub fn event(&mut self, ev: &Event) {
        self.at_time(ev.t);
        self.count_io(ev);
        let a = ev.action;
        let at = (ev.dev, ev.key_sector());
        let session = if self.plug_clock
            && matches!(
                a,
                Action::Queue
                    | Action::GetRequest
                    | Action::Plug
                    | Action::Unplug
                    | Action::UnplugTimer
            ) {
            Some(self.plug_event(ev.pid, a, ev.t))
        } else {
            None
        };
        match a {
            Action::Queue => self.queue(ev, session),
            Action::GetRequest => {
                self.after_get_event(at, ev, None);
                let (p, _) = self.chain_node(at, Some(a));
                if let Some(p) = p {
                    let clock = session.and_then(|s| self.sessions[s].first_q_or_g);
                    self.land(p, ev, clock);
                }
                if ev.sector.is_none() {
                    self.fifo_get(ev.dev, p);
                }
            }
            Action::BackMerge | Action::FrontMerge => {
                if let (Some(p), _) = self.chain_node(at, Some(a)) {
                    self.land(p, ev, None);
                }
            }
            Action::Split => self.split(ev),
            Action::Insert => self.after_get_event(at, ev, None),
            Action::Remap if ev.sector.is_some() => {
                self.remaps.insert(at, ev.remap);
            }
            _ => {}
        }
        if matches!(a, Action::Dispatch | Action::Requeue | Action::Complete) {
            self.request_event(ev);
        }
    }

    /// A P, U or UT: it moves the current nanosecond and, when the plug clock is kept, its
    /// task's plug session; no other rule hears of it (it has no sector and no request).
    pub fn plug_action(&mut self, pid: i64, a: Action, t: i64) {
        self.at_time(t);
        if self.plug_clock {
            self.plug_event(pid, a, t);
        }
    }

    /// The events' clock: the D's remembered for covering are those of the current nanosecond.
    #[inline(always)]
    fn at_time(&mut self, t: i64) {
        if self.now != Some(t) {
            self.now = Some(t);
            self.dispatched_now.clear();
        }
    }

    /// A Q: a new bio (remapped if an A on its sector came just before), whose piece waits for
    /// the next node on its sector; on a device where nothing lands it is lost at once, and on
    /// a bio-based device it waits for its own C.
    fn queue(&mut self, ev: &Event, session: Option<Id>) {
        let at = (ev.dev, ev.key_sector());
        let remap = match ev.sector {
            Some(_) if !self.remaps.is_empty() => self.remaps.remove(&at).unwrap_or_default(),
            _ => Default::default(),
        };
        if ev.flush {
            self.flush_q.insert((ev.dev, ev.key_sector().max(0)), ev.t);
        }
        self.chain_node(at, Some(Action::Queue));
        let b = self.new_bio(ev, session);
        self.q2q_at_queue(b, ev);
        self.bios[b].remap = remap;
        let p = self.new_piece(b);
        if !self.devices[ev.dev].has_bio_nodes {
            self.lose(p); // no G/M/F/X on this device at all (bio-based): nothing can land
        } else {
            self.chain.insert(at, p);
        }
        if !self.devices[ev.dev].dispatches && ev.sector.is_some() && self.bios.contains(b) {
            self.bio_wait_for_completion(b);
        }
        self.depth.step(ev.t, queue_key(ev.dev), Delta::Plus, 0);
    }

    /// An X: the head piece lands on the node after it; the remainder, a new piece of the same
    /// bio, starts anew at the split sector (and may be split again).
    fn split(&mut self, ev: &Event) {
        let (_, head) = self.chain_node((ev.dev, ev.key_sector()), Some(Action::Split));
        let Some(split) = ev.split else {
            return;
        };
        let bio = head.map(|w| self.pieces[w].bio);
        self.chain_node((ev.dev, split), None); // the remainder's start node
        if let Some(b) = bio.filter(|&b| self.bios.contains(b)) {
            let r = self.new_piece(b);
            self.chain.insert((ev.dev, split), r);
        }
    }

    /// A D, R or C: paired into its request (if it has a sector or is a data-less flush); a
    /// D links pieces to its request; a zero-length C ends a flush sequence; a C on a
    /// bio-based device completes bios.
    fn request_event(&mut self, ev: &Event) {
        let a = ev.action;
        let is_flush = ev.is_dataless_flush();
        let mut first_of = None;
        if ev.sector.is_some() || is_flush {
            let (request, without_d) = self.pair_event(ev);
            first_of = request;
            self.depth_step(ev, without_d);
        }
        match a {
            Action::Dispatch => {
                self.after_get_event((ev.dev, ev.key_sector()), ev, first_of);
                if ev.sector.is_none() {
                    self.fifo_dispatch(ev.dev, ev.eid, first_of);
                } else {
                    self.cover_dispatch(ev, first_of);
                }
            }
            Action::Complete if !is_flush => {
                if let Some(sector) = ev.sector {
                    if ev.nsectors == Some(0) {
                        self.flush_end((ev.dev, sector), ev.t);
                    } else if !self.devices[ev.dev].dispatches {
                        self.bio_done((ev.dev, sector, ev.nsectors.unwrap_or(-1)), ev.t);
                    }
                }
            }
            _ => {}
        }
    }

    /// A request event's step of the driver level: D +1, R -1, C -1 (not a flush sequence's
    /// zero-length C, nor a bio-based device's C); a C whose request had no D is a boundary.
    fn depth_step(&mut self, ev: &Event, without_d: bool) {
        let key = driver_key(ev.dev);
        let dispatches = self.devices[ev.dev].dispatches;
        let n = ev.nsectors.unwrap_or(-1);
        let delta = match ev.action {
            Action::Dispatch => Delta::Plus,
            Action::Requeue => Delta::Minus,
            _ if ev.is_dataless_flush() || (n > 0 && dispatches) => {
                if without_d {
                    Delta::Boundary
                } else {
                    Delta::Minus
                }
            }
            _ if n < 0 && dispatches && without_d => Delta::NoLength,
            _ => return,
        };
        self.depth.step(ev.t, key, delta, ev.eid);
    }

    /// The batch's events are all in: tasks idle for long are done with their sessions, the
    /// requests waiting for them are written, and the depth walk goes up to its horizon.
    pub fn end_batch(&mut self) -> Result<(), String> {
        self.close_idle_sessions(self.now, false);
        self.retry_deferred();
        let horizon = self.horizon();
        self.depth.end_batch(horizon)
    }

    /// The earliest time a bio still waiting (every piece settled) could be written with: the
    /// depth walk holds back the steps at or after it.
    fn horizon(&self) -> i64 {
        self.bios
            .iter()
            .filter(|(_, bio)| bio.pending == 0)
            .filter_map(|(_, bio)| max_some(bio.bio_c_t.or(bio.c_t), bio.flush_end_t))
            .min()
            .unwrap_or(i64::MAX)
    }

    /// The trace ended: every request, piece and bio still in flight is written as it is.
    pub fn finish(&mut self) -> Result<(), String> {
        let runs: Vec<_> = self.key_runs.drain().collect();
        for (_, mut run) in runs {
            self.close_run(&mut run);
        }
        self.chain.clear();
        self.after_get.clear();
        self.cover.clear();
        self.flush_fifo.clear();
        self.flush_end_wait.clear();
        for p in self.pieces.ids() {
            if self.pieces.contains(p) && !self.pieces[p].settled {
                let piece = &mut self.pieces[p];
                piece.after_get = super::state::AfterGet::Settled;
                piece.cover_block = None;
                self.settle_piece(p, None);
            }
        }
        for b in self.bios.ids() {
            if self.bios.contains(b) && self.bios[b].pending == 0 {
                self.bios[b].wait = Wait::Nothing;
                self.emit_bio(b);
            }
        }
        self.close_idle_sessions(None, true);
        self.retry_deferred();
        self.depth.end()
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::Action::*;
    use super::super::testing::{ev, Trace};

    #[test]
    fn a_queue_right_after_a_remap_on_its_sector_was_remapped() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Remap, 50, 8).remap(8, 1, 1000),
            ev(Queue, 50, 8),
            ev(Queue, 50, 8),
        ]);
        trace.finish();
        let bios = trace.bios();
        assert_eq!(
            (
                bios[0].remap.major,
                bios[0].remap.minor,
                bios[0].remap.sector
            ),
            (Some(8), Some(1), Some(1000))
        );
        assert_eq!(bios[1].remap, Default::default()); // an A remaps one Q
    }

    #[test]
    fn the_trace_end_writes_what_is_in_flight_as_partial() {
        let mut trace = Trace::plain();
        trace.run(&[ev(Queue, 0, 8), ev(GetRequest, 0, 8), ev(Dispatch, 0, 8)]);
        trace.finish();
        let (bio, request) = (&trace.bios()[0], &trace.requests()[0]);
        assert_eq!((bio.d_t, bio.c_t, bio.partial), (Some(3), None, true));
        assert_eq!((request.life.first_d, request.partial), (Some(3), true));
    }
}
