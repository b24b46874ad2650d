//! blktrace binaries: the per-CPU files of `struct blk_io_trace` records, turned into the
//! events rows blkparse would print for them, in blkparse's order.

mod notes;
mod order;
mod print;
pub mod problem;
pub mod record;

use std::collections::{BTreeMap, HashMap};

use arrow_array::ArrayRef;

use notes::Notes;
pub use notes::WallNote;
use order::{blkparse_order, PrintedRecord};
use print::{printed_action, Printer, ProcessName};
use problem::Problem;
use record::{record_offsets, records, Record, RecordKind};

/// A problem and the index of the file it is in.
pub type FileProblem = (usize, Problem);

/// One trace: the per-CPU files of one blktrace run, read and put in print order. It keeps
/// where the records are, not the files' bytes: rows are made from the bytes on request, a
/// slice at a time.
pub struct Trace {
    offsets: Vec<Vec<usize>>,
    /// (file, record index) of each printed record, in print order.
    order: Vec<(u32, u32)>,
    names: HashMap<u32, ProcessName>,
    /// blkparse's time zero: its first printed event that is not a message.
    pub base_time_ns: u64,
    /// The smallest time of any record, notes included.
    pub smallest_time_ns: u64,
    pub wall_notes: Vec<WallNote>,
    /// Notes other than messages.
    pub other_notes: u64,
    pub messages: u64,
    /// Records of codes blkparse does not print, by code.
    pub skipped_by_code: BTreeMap<u8, u64>,
    /// Process names by pid, as the notes' bytes.
    pub comms: HashMap<u32, Vec<u8>>,
}

impl Trace {
    /// Read the files (each one CPU's records) and order their printed records.
    pub fn read(files: &[&[u8]]) -> Result<Trace, FileProblem> {
        let offsets = files
            .iter()
            .enumerate()
            .map(|(f, data)| record_offsets(data).map_err(|p| (f, p)))
            .collect::<Result<Vec<_>, _>>()?;
        let all = || {
            files
                .iter()
                .zip(&offsets)
                .enumerate()
                .flat_map(|(f, (data, offs))| records(data, offs).map(move |r| (f, r)))
        };
        if let Some((f, r)) = all().find(|(_, r)| r.trace.time > i64::MAX as u64) {
            return Err((f, time_out_of_range(&r)));
        }
        let mut notes = Notes::default();
        let mut printed = Vec::new();
        let mut skipped_by_code = BTreeMap::new();
        let mut messages = 0;
        for (f, r) in all() {
            let kind = r.trace.kind();
            match kind {
                RecordKind::Unprinted(code) => *skipped_by_code.entry(code).or_insert(0) += 1,
                RecordKind::Message => messages += 1,
                _ => {}
            }
            notes.read(&r);
            if printed_action(kind).is_some() {
                printed.push(PrintedRecord {
                    time: r.trace.time,
                    cpu: r.trace.cpu,
                    sequence: r.trace.sequence,
                    is_message: kind == RecordKind::Message,
                    file: f as u32,
                    index: r.index as u32,
                });
            }
        }
        let smallest_time_ns = all().map(|(_, r)| r.trace.time).min().unwrap_or(0);
        let base_time_ns = time_zero(&printed).unwrap_or(smallest_time_ns);
        blkparse_order(&mut printed);
        let names = notes
            .comms
            .iter()
            .map(|(&pid, bytes)| (pid, ProcessName::new(bytes)))
            .collect();
        Ok(Trace {
            offsets,
            order: printed.iter().map(|p| (p.file, p.index)).collect(),
            names,
            base_time_ns,
            smallest_time_ns,
            wall_notes: notes.wall_notes,
            other_notes: notes.count,
            messages,
            skipped_by_code,
            comms: notes.comms,
        })
    }

    /// How many rows blkparse prints.
    pub fn num_rows(&self) -> usize {
        self.order.len()
    }

    /// Printed rows start..stop as events columns (`files` as given to `read`).
    pub fn rows(
        &self,
        files: &[&[u8]],
        start: usize,
        stop: usize,
        input_id: i16,
    ) -> Result<Vec<(&'static str, ArrayRef)>, FileProblem> {
        let stop = stop.min(self.order.len());
        let start = start.min(stop);
        let printer = Printer {
            base_time_ns: self.base_time_ns,
            names: &self.names,
            input_id,
        };
        let records = self.order[start..stop].iter().map(|&(f, index)| {
            let (f, index) = (f as usize, index as usize);
            (f, Record::at(files[f], index, self.offsets[f][index]))
        });
        printer.rows(records, start as i64 + 1)
    }

    /// How many records each file holds.
    pub fn records_per_file(&self) -> Vec<usize> {
        self.offsets.iter().map(Vec::len).collect()
    }
}

/// blkparse's time zero is its first event: notes do not count. Messages do not either, since
/// blkparse 1.2 drops cgroup-tagged ones (bfq's), and we want its times on such traces; a
/// trace of messages only starts at its first message.
fn time_zero(printed: &[PrintedRecord]) -> Option<u64> {
    let events = printed
        .iter()
        .filter(|p| !p.is_message)
        .map(|p| p.time)
        .min();
    events.or_else(|| printed.iter().map(|p| p.time).min())
}

fn time_out_of_range(r: &Record<'_>) -> Problem {
    Problem::OutOfRange {
        record: r.index,
        offset: r.offset,
        field: "time",
        value: r.trace.time,
        largest: i64::MAX as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::record::category;
    use super::record::tests::record_bytes;
    use super::*;
    use arrow_array::{Array, Int64Array, StringArray};

    const WRITE_QUEUE: u32 = (category::WRITE << 16) | 1;
    const NOTE: u32 = category::NOTIFY << 16;

    fn column<'a>(cols: &'a [(&str, ArrayRef)], name: &str) -> &'a ArrayRef {
        &cols.iter().find(|(n, _)| *n == name).unwrap().1
    }

    #[test]
    fn two_cpus_merge_by_time_from_the_first_event() {
        let mut cpu0 = record_bytes(NOTE, 5, 42, b"fio\0");
        cpu0.extend(record_bytes(WRITE_QUEUE, 30, 42, b""));
        let cpu1 = record_bytes(WRITE_QUEUE, 20, 43, b"");
        let files = [&cpu0[..], &cpu1[..]];
        let trace = Trace::read(&files).unwrap();
        assert_eq!((trace.base_time_ns, trace.smallest_time_ns), (20, 5));
        assert_eq!((trace.num_rows(), trace.other_notes), (2, 1));
        assert_eq!(trace.records_per_file(), vec![2, 1]);
        let cols = trace.rows(&files, 0, 2, 0).unwrap();
        let time = column(&cols, "time_ns");
        let time = time.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(time.values().to_vec(), vec![0, 10]);
        let comm = column(&cols, "comm");
        let comm = comm.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((comm.value(0), comm.value(1)), ("(null)", "fio"));
    }

    #[test]
    fn a_time_past_i64_names_its_record() {
        let data = record_bytes(WRITE_QUEUE, u64::MAX, 1, b"");
        let Err((file, problem)) = Trace::read(&[&data[..]]) else {
            panic!("read a time past i64")
        };
        assert_eq!(file, 0);
        assert_eq!(
            problem.message(),
            "record 1 at byte offset 0: time 18446744073709551615 is out of range \
             (largest 9,223,372,036,854,775,807)"
        );
    }

    #[test]
    fn unprinted_codes_are_counted() {
        let mut data = record_bytes(16, 1, 1, b"");
        data.extend(record_bytes(16, 2, 1, b""));
        data.extend(record_bytes(NOTE | 2, 3, 1, b"hello\0"));
        let trace = Trace::read(&[&data[..]]).unwrap();
        assert_eq!(trace.skipped_by_code.get(&16), Some(&2));
        assert_eq!(
            (trace.messages, trace.num_rows(), trace.base_time_ns),
            (1, 1, 3)
        );
        let cols = trace.rows(&[&data[..]], 0, 1, 0).unwrap();
        let message = column(&cols, "message");
        let message = message.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(message.value(0), "hello");
        assert_eq!(column(&cols, "comm").null_count(), 1);
    }
}
