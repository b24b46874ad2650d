//! The plug clock: the time the kernel's disk statistics (iostat's await, aqu-sz) start each
//! request on.
//!
//! Since Linux 6.9 blk_time_get_ns() caches the first time read inside a plug
//! (plug->cur_ktime) and hands that same value to every request allocated until the cache is
//! cleared, which happens only when the plug is flushed at blk_finish_plug or when the task
//! schedules (U / UT), not when blk_add_rq_to_plug flushes a full plug (U followed by P for the
//! next request). So a writeback kworker's whole plug of requests starts at its FIRST Q. A task
//! that sleeps with an empty plug clears the cache without a trace event: a pause of more than
//! 5 ms between its events is taken as such a sleep. A task that slept between a bio's Q and
//! its request's G (throttled, or waiting for a tag) starts the request's clock after waking,
//! so each G also gets the clock of its own session.
//!
//! A session starts at a task's first event, after a pause, after a UT, and after a U that is
//! not a full-plug flush (one followed, past one more U, by the P of the next plug: one event
//! of lookahead, kept per task). A Q's clock is its session's first Q when the session holds a
//! P, else its own time; a G's is its session's first Q or G. A session lives while an open
//! request's piece still refers to it.

use std::collections::hash_map::Entry;

use super::event::Action;
use super::slab::{Id, Slab};
use super::state::{Pass, Session, Task};

/// A task quiet for longer than this slept: its next event starts a new session.
pub const SLEEP_NS: i64 = 5_000_000;

/// One holder of session s let go of it; the last frees its slot.
fn release(sessions: &mut Slab<Session>, s: Id) {
    let session = &mut sessions[s];
    session.refs -= 1;
    if session.refs == 0 {
        sessions.discard(s);
    }
}

/// Session s is final: no Q or P can join it any more.
fn close(sessions: &mut Slab<Session>, s: Id) {
    if !sessions[s].closed {
        sessions[s].closed = true;
        release(sessions, s); // the hold the open session had on itself
    }
}

/// A new session of task pid, held by itself while open.
fn open(sessions: &mut Slab<Session>, pid: i64) -> Id {
    sessions.insert(Session {
        pid,
        refs: 1,
        ..Session::default()
    })
}

impl Pass {
    /// One holder of session s let go of it.
    pub fn session_release(&mut self, s: Id) {
        release(&mut self.sessions, s);
    }

    /// Whether a task's event `a` at `t` starts a new session (the rules above); a U or UT
    /// right after a U is decided by the task's next event (`pending_unplug`).
    fn starts_session(task: &mut Task, a: Action, t: i64) -> bool {
        if t - task.last_t > SLEEP_NS || task.last_action == Action::UnplugTimer {
            return true;
        }
        if task.last_action != Action::Unplug {
            return false;
        }
        if a == Action::Plug {
            false // a full plug flushed: the next request's P, the same session
        } else if a.unplugs() {
            task.pending_unplug = true;
            false
        } else {
            true
        }
    }

    /// The session the task's Q, G, P, U or UT falls in.
    pub fn plug_event(&mut self, pid: i64, a: Action, t: i64) -> Id {
        let sessions = &mut self.sessions;
        let s = match self.tasks.entry(pid) {
            Entry::Vacant(vacant) => {
                let s = open(sessions, pid);
                vacant.insert(Task {
                    session: s,
                    last_action: a,
                    last_t: t,
                    pending_unplug: false,
                });
                s
            }
            Entry::Occupied(mut occupied) => {
                let task = occupied.get_mut();
                // a pending U or UT (right after a U) opened a session of its own unless this
                // event is a P: then it stayed in the old session
                let unplugged = std::mem::take(&mut task.pending_unplug) && a != Action::Plug;
                let starts = Pass::starts_session(task, a, t);
                task.last_action = a;
                task.last_t = t;
                if unplugged || starts {
                    close(sessions, task.session);
                    task.session = open(sessions, pid);
                }
                task.session
            }
        };
        let session = &mut self.sessions[s];
        if a == Action::Queue && session.first_q.is_none() {
            session.first_q = Some(t);
        }
        if matches!(a, Action::Queue | Action::GetRequest) && session.first_q_or_g.is_none() {
            session.first_q_or_g = Some(t);
        }
        if a == Action::Plug {
            session.plugged = true;
        }
        s
    }

    /// Whether session s holds a P, once that is final: a P never leaves a session, and a
    /// session without one stays so once it is closed or once its task's last P in the trace
    /// is behind us (no P can join it any more). None while a P may still come: the requests
    /// of its bios wait, and a task that never plugs keeps none of them waiting, however long
    /// it goes without a pause.
    pub fn session_plugged(&self, s: Id) -> Option<bool> {
        let session = &self.sessions[s];
        if session.plugged {
            return Some(true);
        }
        let plugs_later = match &self.last_plugs {
            None => true,
            Some(last) => last
                .get(&session.pid)
                .is_some_and(|&t| self.now.is_none_or(|now| t >= now)),
        };
        if session.closed || !plugs_later {
            Some(false)
        } else {
            None
        }
    }

    /// Tasks quiet for more than SLEEP_NS before `now` (or every task, at the trace end) start
    /// a new session with their next event: their current sessions are final now.
    pub fn close_idle_sessions(&mut self, now: Option<i64>, everything: bool) {
        let mut idle = Vec::new();
        self.tasks.retain(|_, task| {
            let quiet = everything || now.is_some_and(|now| now - task.last_t > SLEEP_NS);
            if quiet {
                idle.push(task.session);
            }
            !quiet
        });
        for s in idle {
            close(&mut self.sessions, s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::Action::*;
    use super::super::testing::{bare, device, ev, Trace};
    use super::SLEEP_NS;

    fn writeback(plug_clock: bool, pause: i64) -> Trace {
        let mut trace = Trace::new(vec![device(true, true)], plug_clock);
        trace.run(&[
            bare(Plug).at(10),
            ev(Queue, 0, 8).at(11),
            ev(GetRequest, 0, 8).at(12),
            ev(Queue, 8, 8).at(13 + pause),
            ev(GetRequest, 8, 8).at(14 + pause),
            bare(Unplug).at(15 + pause),
            ev(Dispatch, 0, 8).at(16 + pause),
            ev(Dispatch, 8, 8).at(17 + pause),
            ev(Complete, 0, 8).at(18 + pause),
            ev(Complete, 8, 8).at(19 + pause),
        ]);
        trace.finish();
        trace
    }

    #[test]
    fn a_plugged_session_starts_every_request_at_its_first_queue() {
        let starts: Vec<_> = writeback(true, 0)
            .requests()
            .iter()
            .map(|r| r.acct_start)
            .collect();
        assert_eq!(starts, vec![Some(11), Some(11)]);
    }

    #[test]
    fn a_pause_longer_than_a_sleep_starts_a_new_session() {
        let starts: Vec<_> = writeback(true, SLEEP_NS)
            .requests()
            .iter()
            .map(|r| r.acct_start)
            .collect();
        // the second Q's session holds no P: its own Q, or its G's session clock if later
        assert_eq!(starts, vec![Some(11), Some(13 + SLEEP_NS)]);
    }

    #[test]
    fn kernels_before_6_9_start_a_request_at_its_g() {
        let starts: Vec<_> = writeback(false, 0)
            .requests()
            .iter()
            .map(|r| r.acct_start)
            .collect();
        assert_eq!(starts, vec![Some(12), Some(14)]);
    }

    /// One 4 KiB write on sector 8 by task `pid` every 200 us from `t0`, each completing
    /// 100 us after its Q: the task never pauses for 5 ms, so its session never closes.
    fn hot_sector(trace: &mut Trace, pid: i64, t0: i64, ios: i64) {
        for i in 0..ios {
            let t = t0 + i * 200_000;
            trace.run(&[
                ev(Queue, 8, 8).at(t).pid(pid),
                ev(GetRequest, 8, 8).at(t + 1_000).pid(pid),
                ev(Insert, 8, 8).at(t + 2_000).pid(pid),
                ev(Dispatch, 8, 8).at(t + 3_000).pid(pid),
                ev(Complete, 8, 8).at(t + 100_000).pid(0),
            ]);
        }
    }

    #[test]
    fn a_task_that_plugs_no_more_keeps_no_request_waiting() {
        let mut trace = Trace::new(vec![device(true, true)], true);
        // task 7 plugs once, after its two IOs completed; task 9 never plugs
        trace.pass.last_plugs = Some([(7, 350_000)].into_iter().collect());
        hot_sector(&mut trace, 7, 0, 2);
        trace.run(&[bare(Plug).at(350_000).pid(7)]);
        hot_sector(&mut trace, 9, 400_000, 1_000);
        trace.pass.end_batch().unwrap();
        // task 9's requests were written as they completed, each on its own Q's clock; task
        // 7's waited, and its P started both at the session's first Q
        let starts: Vec<_> = trace
            .requests()
            .iter()
            .map(|r| (r.pid, r.acct_start))
            .collect();
        assert_eq!(starts.len(), 1_002);
        assert_eq!(starts[999], (Some(9), Some(400_000 + 999 * 200_000)));
        assert_eq!(&starts[1_000..], &[(Some(7), Some(0)), (Some(7), Some(0))]);
        assert!(trace.pass.deferred.is_empty());
        // at most task 7's two, waiting for its P, and one of task 9's in flight
        assert_eq!(trace.pass.requests.most_held(), 3);
    }

    #[test]
    fn a_task_that_may_still_plug_keeps_its_requests_waiting() {
        let mut trace = Trace::new(vec![device(true, true)], true);
        trace.pass.last_plugs = Some([(7, 10_000_000)].into_iter().collect());
        hot_sector(&mut trace, 7, 0, 10);
        trace.pass.end_batch().unwrap();
        assert_eq!(trace.pass.deferred.len(), 10);
        assert!(trace.pass.request_rows.is_empty());
    }

    #[test]
    fn a_request_waits_while_its_session_is_open_and_unplugged() {
        let mut trace = Trace::new(vec![device(true, true)], true);
        trace.run(&[
            ev(Queue, 0, 8),
            ev(GetRequest, 0, 8),
            ev(Dispatch, 0, 8),
            ev(Complete, 0, 8),
        ]);
        assert!(trace.pass.request_rows.is_empty() && trace.pass.deferred.len() == 1);
        trace.pass.end_batch().unwrap(); // not idle for 5 ms yet
        assert!(trace.pass.request_rows.is_empty());
        trace.run(&[bare(Dispatch).at(SLEEP_NS + 10).pid(2)]);
        trace.pass.end_batch().unwrap();
        assert_eq!(trace.pass.request_rows[0].acct_start, Some(1));
    }
}
