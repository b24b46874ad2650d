//! Q2Q gaps: the time from the previous Q of a bio's reporting group to its own Q, at the four
//! scopes stage_stats reports Q2Q at (process: device x op class x process; class: device x op
//! class; op: device x op; device). The pass meets every Q in (time, event id) order, the order
//! the gaps are defined in, so the previous Q of a group is one time per group.
//!
//! A bio's op class is not defined here: the `op_class` and `bio_op_class` SQL macros
//! (blkscope/concepts.py) stay its one definition. Python evaluates them in DuckDB once per
//! RWBS string the pass meets (x op letter x whether the Q has a sector) and hands the names
//! over (`OpClasses::add`); the pass reads a Q's class from them.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use super::event::Event;
use super::slab::Id;
use super::state::Pass;
use crate::hash::FastMap;

/// The scopes, in the order of the gap columns.
pub const SCOPES: [&str; 4] = ["process", "class", "op", "device"];

/// The time of the latest Q of each group: per (device, op class, comm) at the process scope
/// (with the reporting group's index in `StageCounts`, found by the same lookup), per device
/// and op class (op) code at the class (op) scope, per device.
#[derive(Default)]
pub struct LatestQueues {
    process: FastMap<(usize, u32, u32), ProcessQueue>,
    class: Vec<Vec<Option<i64>>>,
    base: Vec<Vec<Option<i64>>>,
    device: Vec<Option<i64>>,
}

/// A process group's latest Q, and its index among the stage counts' reporting groups.
#[derive(Clone, Copy)]
struct ProcessQueue {
    last: i64,
    group: u32,
}

/// The slot of `code` in a per-device table of slots, grown as needed.
fn slot(table: &mut Vec<Vec<Option<i64>>>, dev: usize, code: u32) -> &mut Option<i64> {
    if table.len() <= dev {
        table.resize(dev + 1, Vec::new());
    }
    let row = &mut table[dev];
    if row.len() <= code as usize {
        row.resize(code as usize + 1, None);
    }
    &mut row[code as usize]
}

impl LatestQueues {
    /// A Q at t of (device, class, comm): its gap to the previous Q of each of its groups, per
    /// scope (None for a group's first Q), and its reporting group's index (`group` numbers a
    /// group key the first time it is met).
    pub fn gaps(
        &mut self,
        dev: usize,
        class: QClass,
        comm: u32,
        t: i64,
        group: impl FnOnce(i64) -> u32,
    ) -> ([Option<i64>; 4], u32) {
        if self.device.len() <= dev {
            self.device.resize(dev + 1, None);
        }
        let gap = |last: Option<i64>| last.map(|last| t - last);
        let (process, index) = match self.process.entry((dev, class.class, comm)) {
            Entry::Occupied(mut seen) => {
                let queue = seen.get_mut();
                (Some(std::mem::replace(&mut queue.last, t)), queue.group)
            }
            Entry::Vacant(new) => {
                let index = group(group_key(dev, class, comm));
                new.insert(ProcessQueue {
                    last: t,
                    group: index,
                });
                (None, index)
            }
        };
        let gaps = [
            gap(process),
            gap(slot(&mut self.class, dev, class.class).replace(t)),
            gap(slot(&mut self.base, dev, class.base).replace(t)),
            gap(self.device[dev].replace(t)),
        ];
        (gaps, index)
    }
}

/// Which of the 8 classes of an RWBS a Q has: its op letter (R W D N) and whether it has no
/// sector.
pub fn class_column(op: usize, has_sector: bool) -> usize {
    op * 2 + usize::from(!has_sector)
}

/// A Q's two classes: `bio_op_class` (op class plus /sync, /meta) and `op_class` (the base).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct QClass {
    pub class: u32,
    pub base: u32,
}

/// The op classes of every RWBS (by the pass's RWBS code; None: a Q without RWBS), as codes
/// into their names.
#[derive(Default)]
pub struct OpClasses {
    by_rwbs: Vec<Option<[QClass; 8]>>,
    no_rwbs: Option<[QClass; 8]>,
    pub class_names: Vec<String>,
    pub base_names: Vec<String>,
    class_codes: HashMap<String, u32>,
    base_codes: HashMap<String, u32>,
}

fn code_of(codes: &mut HashMap<String, u32>, names: &mut Vec<String>, name: &str) -> u32 {
    if let Some(&code) = codes.get(name) {
        return code;
    }
    let code = names.len() as u32;
    names.push(name.to_string());
    codes.insert(name.to_string(), code);
    code
}

impl OpClasses {
    /// The classes of one RWBS (its code; None for a Q without one): (base, class) names for
    /// each of the 8 columns of `class_column`.
    pub fn add(&mut self, rwbs: Option<u32>, names: &[(String, String); 8]) {
        let mut classes = [QClass::default(); 8];
        for (c, (base, class)) in names.iter().enumerate() {
            classes[c] = QClass {
                class: code_of(&mut self.class_codes, &mut self.class_names, class),
                base: code_of(&mut self.base_codes, &mut self.base_names, base),
            };
        }
        match rwbs {
            None => self.no_rwbs = Some(classes),
            Some(code) => {
                let code = code as usize;
                if self.by_rwbs.len() <= code {
                    self.by_rwbs.resize(code + 1, None);
                }
                self.by_rwbs[code] = Some(classes);
            }
        }
    }

    /// Whether the classes of this RWBS are known.
    pub fn knows(&self, rwbs: Option<u32>) -> bool {
        match rwbs {
            None => self.no_rwbs.is_some(),
            Some(code) => matches!(self.by_rwbs.get(code as usize), Some(Some(_))),
        }
    }

    /// A Q's classes (its RWBS, op and sector); Python added every RWBS before the events
    /// that carry it.
    pub fn of(&self, rwbs: Option<u32>, op: usize, has_sector: bool) -> QClass {
        let classes = match rwbs {
            None => self.no_rwbs.as_ref(),
            Some(code) => self.by_rwbs.get(code as usize).and_then(Option::as_ref),
        };
        classes.expect("the op classes of every RWBS are added before its events")
            [class_column(op, has_sector)]
    }
}

/// A reporting group (device, op class, process) as one integer, the Q2Q file's `group_key`:
/// device index << 48 | class code << 32 | comm code.
pub fn group_key(dev: usize, class: QClass, comm: u32) -> i64 {
    ((dev as i64) << 48) | (i64::from(class.class) << 32) | i64::from(comm)
}

/// `bios`' comm code of a Q without a comm: the comm dictionary's first entry is '?', so that
/// a Q without a comm and one whose comm is '?' share a process group (coalesce(comm, '?')).
pub const UNKNOWN_COMM: u32 = 0;
pub const UNKNOWN_COMM_NAME: &str = "?";

impl Pass {
    /// Bio b was just queued by `ev`: its gaps to the previous Q of each of its groups, and
    /// its reporting group (the one its latencies are counted in when its row is handed over).
    pub fn q2q_at_queue(&mut self, b: Id, ev: &Event) {
        let class = self
            .op_classes
            .of(ev.rwbs, ev.op as usize, ev.sector.is_some());
        let comm = ev.comm.unwrap_or(UNKNOWN_COMM);
        let stage_counts = &mut self.stage_counts;
        let (gaps, group) = self
            .latest_queues
            .gaps(ev.dev, class, comm, ev.t, |key| stage_counts.group(key));
        let bio = &mut self.bios[b];
        bio.q2q = gaps;
        bio.group = group;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(base: &str, class: &str) -> [(String, String); 8] {
        std::array::from_fn(|_| (base.to_string(), class.to_string()))
    }

    #[test]
    fn each_name_gets_one_code_across_rwbs() {
        let mut classes = OpClasses::default();
        classes.add(Some(3), &names("write", "write/sync"));
        classes.add(None, &names("other", "other"));
        classes.add(Some(0), &names("write", "write"));
        assert!(classes.knows(Some(3)) && classes.knows(None) && !classes.knows(Some(1)));
        assert_eq!(classes.of(Some(0), 1, true), QClass { class: 2, base: 0 });
        assert_eq!(classes.base_names, vec!["write", "other"]);
        assert_eq!(classes.class_names, vec!["write/sync", "other", "write"]);
    }
}

#[cfg(test)]
mod gap_tests {
    use super::super::event::Action::*;
    use super::super::testing::{ev, Trace};

    #[test]
    fn a_queue_measures_from_the_previous_queue_of_each_of_its_groups() {
        let mut trace = Trace::plain();
        trace.run(&[
            ev(Queue, 0, 8).pid(1).at(10),
            ev(Queue, 8, 8).pid(2).at(15),
            ev(Queue, 16, 8).pid(1).at(22),
        ]);
        trace.finish();
        let gaps: Vec<_> = trace.bios().iter().map(|b| b.q2q).collect();
        assert_eq!(gaps[0], [None; 4]);
        // the comm is the same (code 1): one process group
        assert_eq!(gaps[1], [Some(5); 4]);
        assert_eq!(gaps[2], [Some(7); 4]);
    }
}
