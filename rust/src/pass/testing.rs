//! A small trace builder for the rules' unit tests: one or more devices, events appended one
//! nanosecond apart (or at a given time), run through a `Pass`.

use super::depth::{Bounds, DepthWalk};
use super::event::{Action, Event, Op, Remap};
use super::rows::{BioRow, RequestKind, RequestRow};
use super::state::{Device, Pass};

/// How a test device behaves: request-based (D events) or bio-based, with bio nodes or not.
pub fn device(dispatches: bool, has_bio_nodes: bool) -> Device {
    Device {
        major: 254,
        minor: 0,
        dispatches,
        has_bio_nodes,
        ..Device::default()
    }
}

pub struct Trace {
    pub pass: Pass,
    pub t: i64,
    eid: i64,
}

/// One event to append: action, sector, length; the rest set by the builder's methods.
#[derive(Clone, Copy)]
pub struct Ev {
    pub action: Action,
    pub sector: Option<i64>,
    pub nsectors: Option<i64>,
    pub dev: usize,
    pub op: Op,
    pub flush: bool,
    pub rwbs: Option<u32>,
    pub split: Option<i64>,
    pub remap: Remap,
    pub pid: i64,
    pub comm: Option<u32>,
    pub t: Option<i64>,
}

pub fn ev(action: Action, sector: i64, nsectors: i64) -> Ev {
    Ev {
        action,
        sector: Some(sector),
        nsectors: Some(nsectors),
        dev: 0,
        op: Op::Write,
        flush: false,
        rwbs: Some(0),
        split: None,
        remap: Remap::default(),
        pid: 100,
        comm: Some(1),
        t: None,
    }
}

/// An event without a sector or a length (P, U, a data-less flush, ...).
pub fn bare(action: Action) -> Ev {
    Ev {
        sector: None,
        nsectors: None,
        ..ev(action, 0, 0)
    }
}

/// A write of `pages` 4 KiB pages at sector 0, split page by page (each remainder split again),
/// each page a request of its own: Q, the X's, then every G, every D and every C in page order.
pub fn split_write(pages: i64) -> Vec<Ev> {
    let mut events = vec![ev(Action::Queue, 0, 8 * pages)];
    for k in 0..pages - 1 {
        events.push(ev(Action::Split, 8 * k, 8 * (pages - k)).split_at(8 * (k + 1)));
    }
    for action in [Action::GetRequest, Action::Dispatch, Action::Complete] {
        events.extend((0..pages).map(|k| ev(action, 8 * k, 8)));
    }
    events
}

impl Ev {
    pub fn at(self, t: i64) -> Ev {
        Ev { t: Some(t), ..self }
    }
    pub fn pid(self, pid: i64) -> Ev {
        Ev { pid, ..self }
    }
    pub fn on(self, dev: usize) -> Ev {
        Ev { dev, ..self }
    }
    /// A preflush (F before the op), or with op N a data-less flush.
    pub fn flush(self, op: Op) -> Ev {
        Ev {
            flush: true,
            op,
            ..self
        }
    }
    pub fn split_at(self, split: i64) -> Ev {
        Ev {
            split: Some(split),
            ..self
        }
    }
    pub fn remap(self, major: i64, minor: i64, sector: i64) -> Ev {
        Ev {
            remap: Remap {
                major: Some(major),
                minor: Some(minor),
                sector: Some(sector),
            },
            ..self
        }
    }
}

impl Trace {
    pub fn new(devices: Vec<Device>, plug_clock: bool) -> Trace {
        let bounds: Vec<Option<Bounds>> = devices
            .iter()
            .map(|_| {
                Some(Bounds {
                    t0: 0,
                    t1: 1000,
                    start: 0,
                    width: 100,
                    bins: 11,
                })
            })
            .collect();
        let mut pass = Pass::new(plug_clock, devices, DepthWalk::new(&bounds));
        let names: [(String, String); 8] =
            std::array::from_fn(|_| ("write".to_string(), "write".to_string()));
        pass.op_classes.add(Some(0), &names);
        pass.op_classes.add(None, &names);
        Trace { pass, t: 0, eid: 0 }
    }

    /// A trace on one request-based device with bio nodes, without the plug clock.
    pub fn plain() -> Trace {
        Trace::new(vec![device(true, true)], false)
    }

    pub fn run(&mut self, events: &[Ev]) -> &mut Trace {
        for e in events {
            self.t = e.t.unwrap_or(self.t + 1);
            self.eid += 1;
            if e.action.plugs() {
                // as StreamPass::run sends them
                self.pass.plug_action(e.pid, e.action, self.t);
                continue;
            }
            self.pass.event(&Event {
                t: self.t,
                eid: self.eid,
                dev: e.dev,
                action: e.action,
                op: e.op,
                flush: e.flush,
                rwbs: e.rwbs,
                sector: e.sector,
                nsectors: e.nsectors,
                split: e.split,
                remap: e.remap,
                error: (e.action == Action::Complete).then_some(0),
                pid: e.pid,
                comm: e.comm,
            });
        }
        self
    }

    /// End the batch and the trace.
    pub fn finish(&mut self) -> &mut Trace {
        self.pass.end_batch().expect("the batch ends");
        self.pass.finish().expect("the trace ends");
        self
    }

    /// Every request written, the held ones (kind waiting for the orphan verdict) last.
    pub fn requests(&self) -> Vec<RequestRow> {
        let mut rows = self.pass.request_rows.clone();
        rows.extend(self.pass.held.iter().map(|h| h.row.clone()));
        rows
    }

    pub fn requests_of(&self, kind: RequestKind) -> Vec<RequestRow> {
        self.requests()
            .into_iter()
            .filter(|r| r.kind == kind)
            .collect()
    }

    /// Every bio written, by Q time.
    pub fn bios(&self) -> Vec<BioRow> {
        let mut rows = self.pass.bio_rows.clone();
        rows.sort_by_key(|b| (b.q_t, b.q_eid));
        rows
    }
}
