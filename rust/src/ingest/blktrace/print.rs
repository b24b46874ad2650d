//! What blkparse prints for each record (blkparse_fmt.c, process_default()), as events rows:
//! which columns an action shows, how RWBS comes from the category bits, and what the payload
//! holds (a split's or unplug's number, a remap's origin, a message, a SCSI command).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::ArrayRef;

use super::notes::up_to_nul;
use super::problem::Problem;
use super::record::{category, BlkIoTrace, Record, RecordKind};
use crate::ingest::action::Action;
use crate::ingest::events::{Event, EventColumns, Vocabulary};
use crate::ingest::rwbs::{Op, Rwbs};

const INT32_MAX: u64 = i32::MAX as u64;
const INT64_MAX: u64 = i64::MAX as u64;

/// The action blkparse prints a record as: an event's, or m for a message.
pub fn printed_action(kind: RecordKind) -> Option<Action> {
    match kind {
        RecordKind::Event(action) => Some(action),
        RecordKind::Message => Some(Action::Message),
        _ => None,
    }
}

/// RWBS from the category bits (fill_rwbs): discard, write, else read when the IO has bytes
/// and N when it has none; a message is N.
pub fn rwbs_of(trace: &BlkIoTrace, action: Action) -> Rwbs {
    if action == Action::Message {
        return Rwbs::plain(Op::None);
    }
    let cat = trace.category();
    let op = if cat & category::DISCARD != 0 {
        Op::Discard
    } else if cat & category::WRITE != 0 {
        Op::Write
    } else if trace.bytes > 0 {
        Op::Read
    } else {
        Op::None
    };
    Rwbs {
        preflush: cat & category::FLUSH != 0,
        op,
        fua: cat & category::FUA != 0,
        readahead: cat & category::AHEAD != 0,
        sync: cat & category::SYNC != 0,
        meta: cat & category::META != 0,
    }
}

/// The process name of a pid: UTF-8 text, and the raw bytes when they are not UTF-8.
pub struct ProcessName {
    text: String,
    raw: Option<Vec<u8>>,
}

impl ProcessName {
    pub fn new(bytes: &[u8]) -> ProcessName {
        match std::str::from_utf8(bytes) {
            Ok(text) => ProcessName {
                text: text.to_string(),
                raw: None,
            },
            Err(_) => ProcessName {
                text: String::from_utf8_lossy(bytes).into_owned(),
                raw: Some(bytes.to_vec()),
            },
        }
    }
}

/// blkparse prints a NULL name for a pid without a process note, which glibc shows so.
const NO_NAME: &str = "(null)";

/// Which of blkparse's shapes a printed record takes.
struct Shape {
    /// `sector + count`
    sized: bool,
    /// C and R: `sector + count [error]`
    completion: bool,
    split: bool,
    unplug: bool,
    remap: bool,
    /// SCSI pass-through: bytes (Q I D B) or the command (I D B C) instead of a position.
    pc: bool,
    pc_bytes: bool,
}

impl Shape {
    fn of(trace: &BlkIoTrace, action: Action) -> Shape {
        use Action::*;
        let pc = trace.category() & category::PC != 0
            && matches!(action, Queue | Insert | Issue | Bounce | Complete | Requeue);
        Shape {
            sized: action.prints_sector_plus_count() && trace.bytes > 0 && !pc,
            completion: action.is_completion() && !pc,
            split: action == Split,
            unplug: matches!(action, Unplug | UnplugTimer),
            remap: action == Remap,
            pc,
            pc_bytes: pc && matches!(action, Queue | Insert | Issue | Bounce),
        }
    }

    fn has_sector(&self) -> bool {
        self.sized || self.completion || self.split
    }
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes(bytes[..4].try_into().unwrap())
}

fn be64(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(bytes[..8].try_into().unwrap())
}

/// The big-endian u64 a split (the split sector) or an unplug (the depth) carries; 0 when the
/// payload is too short.
fn payload_u64(record: &Record<'_>) -> u64 {
    let payload = record.payload_after_cgroup();
    if payload.len() >= 8 {
        be64(payload)
    } else {
        0
    }
}

/// A remap's payload (blk_io_trace_remap): be32 device_from, be32 device_to, be64
/// sector_from; zeros when the payload is too short.
fn remap_origin(record: &Record<'_>) -> (u32, u64) {
    let payload = record.payload_after_cgroup();
    if payload.len() >= 16 {
        (be32(payload), be64(&payload[8..]))
    } else {
        (0, 0)
    }
}

/// A message's text: the payload after any cgroup id, up to the first NUL; bytes that are not
/// UTF-8 become U+FFFD, as blkparse's binary path does.
fn message_text(record: &Record<'_>) -> String {
    String::from_utf8_lossy(up_to_nul(record.payload_after_cgroup())).into_owned()
}

/// A cgroup-tagged message's cgroup as blkparse prints it: "ino,gen" in hex, from the u32
/// inode and generation (native order) of the payload's first 8 bytes.
fn cgroup_text(record: &Record<'_>) -> Option<String> {
    if !record.trace.has_cgroup() || record.payload.len() < 8 {
        return None;
    }
    let ino = u32::from_le_bytes(record.payload[..4].try_into().unwrap());
    let generation = u32::from_le_bytes(record.payload[4..8].try_into().unwrap());
    Some(format!("{ino:x},{generation:x}"))
}

/// A SCSI command as blkparse prints it: "0a 0b 0c" (None when there is none).
fn pdu_hex(payload: &[u8]) -> Option<String> {
    if payload.is_empty() {
        return None;
    }
    let hex: Vec<String> = payload.iter().map(|b| format!("{b:02x}")).collect();
    Some(hex.join(" "))
}

/// The first record, in print order, whose field does not fit its column, for each field
/// checked (in the order they are reported), with the file it is in.
#[derive(Default)]
struct RangeChecks {
    first: [Option<(usize, Problem)>; 5],
}

impl RangeChecks {
    const CPU: usize = 0;
    const SECTOR: usize = 1;
    const SPLIT: usize = 2;
    const DEPTH: usize = 3;
    const REMAP: usize = 4;
    const NAMES: [&'static str; 5] = ["cpu", "sector", "split sector", "depth", "remap sector"];

    fn check(&mut self, which: usize, file: usize, record: &Record<'_>, value: u64, largest: u64) {
        if value > largest && self.first[which].is_none() {
            let problem = Problem::OutOfRange {
                record: record.index,
                offset: record.offset,
                field: Self::NAMES[which],
                value,
                largest,
            };
            self.first[which] = Some((file, problem));
        }
    }

    fn first_problem(self) -> Option<(usize, Problem)> {
        self.first.into_iter().flatten().next()
    }
}

/// The columns only binary records fill.
struct BinaryOnly {
    remap_dev_major: Int32Builder,
    remap_dev_minor: Int32Builder,
    remap_sector: Int64Builder,
    comm_raw: BinaryBuilder,
    message: StringBuilder,
    pc_bytes: Int64Builder,
    pdu: StringBuilder,
    cgroup: StringBuilder,
}

impl BinaryOnly {
    fn with_capacity(rows: usize) -> BinaryOnly {
        BinaryOnly {
            remap_dev_major: Int32Builder::with_capacity(rows),
            remap_dev_minor: Int32Builder::with_capacity(rows),
            remap_sector: Int64Builder::with_capacity(rows),
            comm_raw: BinaryBuilder::new(),
            message: StringBuilder::new(),
            pc_bytes: Int64Builder::with_capacity(rows),
            pdu: StringBuilder::new(),
            cgroup: StringBuilder::new(),
        }
    }

    fn finish(mut self) -> Vec<(&'static str, ArrayRef)> {
        vec![
            (
                "remap_dev_major",
                Arc::new(self.remap_dev_major.finish()) as ArrayRef,
            ),
            ("remap_dev_minor", Arc::new(self.remap_dev_minor.finish())),
            ("remap_sector", Arc::new(self.remap_sector.finish())),
            ("comm_raw", Arc::new(self.comm_raw.finish())),
            ("message", Arc::new(self.message.finish())),
            ("pc_bytes", Arc::new(self.pc_bytes.finish())),
            ("pdu", Arc::new(self.pdu.finish())),
            ("cgroup", Arc::new(self.cgroup.finish())),
        ]
    }
}

/// Events rows of printed records, in the order given.
pub struct Printer<'a> {
    pub base_time_ns: u64,
    pub names: &'a HashMap<u32, ProcessName>,
    pub input_id: i16,
}

impl Printer<'_> {
    /// The rows of `records` (numbered from `first_line`); the first out-of-range field, in
    /// the order cpu, sector, split sector, depth, remap sector, with the file it is in.
    #[allow(clippy::type_complexity)]
    pub fn rows<'r>(
        &self,
        records: impl ExactSizeIterator<Item = (usize, Record<'r>)>,
        first_line: i64,
    ) -> Result<Vec<(&'static str, ArrayRef)>, (usize, Problem)> {
        let count = records.len();
        let mut events = EventColumns::with_capacity(count, count * 8);
        let mut only = BinaryOnly::with_capacity(count);
        let mut checks = RangeChecks::default();
        for (k, (file, record)) in records.enumerate() {
            let line_no = first_line + k as i64;
            self.push(file, &record, line_no, &mut events, &mut only, &mut checks);
        }
        if let Some(problem) = checks.first_problem() {
            return Err(problem);
        }
        let mut columns = events.finish("blktrace", self.input_id, Vocabulary::Texts);
        columns.extend(only.finish());
        Ok(columns)
    }

    fn push(
        &self,
        file: usize,
        record: &Record<'_>,
        line_no: i64,
        events: &mut EventColumns,
        only: &mut BinaryOnly,
        checks: &mut RangeChecks,
    ) {
        let t = &record.trace;
        let action = printed_action(t.kind()).expect("only printed records are ordered");
        let shape = Shape::of(t, action);
        let is_message = action == Action::Message;
        let number = if shape.split || shape.unplug {
            payload_u64(record)
        } else {
            0
        };
        checks.check(RangeChecks::CPU, file, record, u64::from(t.cpu), INT32_MAX);
        if shape.has_sector() {
            checks.check(RangeChecks::SECTOR, file, record, t.sector, INT64_MAX);
        }
        if shape.split {
            checks.check(RangeChecks::SPLIT, file, record, number, INT64_MAX);
        }
        if shape.unplug {
            checks.check(
                RangeChecks::DEPTH,
                file,
                record,
                number & 0xFFFF_FFFF,
                INT32_MAX,
            );
        }
        let (remap_device, remap_sector) = remap_origin(record);
        if shape.remap {
            checks.check(RangeChecks::REMAP, file, record, remap_sector, INT64_MAX);
        }
        let name = action.prints_comm().then(|| self.names.get(&t.pid));
        events.push(&Event {
            dev_major: t.dev_major(),
            dev_minor: t.dev_minor(),
            cpu: t.cpu as i32,
            // blkparse prints messages with sequence and pid 0, whatever the record holds
            seq: if is_message { 0 } else { i64::from(t.sequence) },
            time_ns: t.time as i64 - self.base_time_ns as i64,
            pid: if is_message { 0 } else { i64::from(t.pid) },
            action,
            rwbs: rwbs_of(t, action),
            sector: shape.has_sector().then_some(t.sector as i64),
            nsectors: (shape.sized || shape.completion).then_some((t.bytes >> 9) as i32),
            split_sector: shape.split.then_some(number as i64),
            error: (action.is_completion()).then_some(i32::from(t.error)),
            comm: name.map(|n| n.map_or(NO_NAME, |n| n.text.as_str())),
            depth: shape.unplug.then_some((number & 0xFFFF_FFFF) as i32),
            line_no,
        });
        only.comm_raw
            .append_option(name.flatten().and_then(|n| n.raw.as_deref()));
        if shape.remap {
            only.remap_dev_major
                .append_value((remap_device >> 20) as i32);
            only.remap_dev_minor
                .append_value((remap_device & 0xFFFFF) as i32);
            only.remap_sector.append_value(remap_sector as i64);
        } else {
            only.remap_dev_major.append_null();
            only.remap_dev_minor.append_null();
            only.remap_sector.append_null();
        }
        only.message
            .append_option(is_message.then(|| message_text(record)));
        only.pc_bytes
            .append_option(shape.pc_bytes.then_some(i64::from(t.bytes)));
        let command = shape.pc
            && matches!(
                action,
                Action::Insert | Action::Issue | Action::Bounce | Action::Complete
            );
        only.pdu.append_option(if command {
            pdu_hex(record.payload)
        } else {
            None
        });
        only.cgroup.append_option(if is_message {
            cgroup_text(record)
        } else {
            None
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(action: u32, bytes: u32) -> BlkIoTrace {
        BlkIoTrace {
            magic: 0x6561_7407,
            sequence: 1,
            time: 0,
            sector: 0,
            bytes,
            action,
            pid: 0,
            device: 0,
            cpu: 0,
            error: 0,
            pdu_len: 0,
        }
    }

    #[test]
    fn rwbs_from_category_bits() {
        let write_sync_fua = ((category::WRITE | category::SYNC | category::FUA) << 16) | 1;
        assert_eq!(
            rwbs_of(&trace(write_sync_fua, 4096), Action::Queue).text(),
            "WFS"
        );
        assert_eq!(rwbs_of(&trace(1, 4096), Action::Queue).text(), "R");
        assert_eq!(
            rwbs_of(&trace(category::FLUSH << 16, 0), Action::Queue).text(),
            "FN"
        );
        let discard = ((category::DISCARD | category::WRITE) << 16) | 1;
        assert_eq!(rwbs_of(&trace(discard, 4096), Action::Queue).text(), "D");
        assert_eq!(
            rwbs_of(&trace(category::WRITE << 16, 0), Action::Message).text(),
            "N"
        );
    }

    #[test]
    fn shapes_of_actions() {
        let q = Shape::of(&trace(1, 4096), Action::Queue);
        assert!(q.sized && q.has_sector() && !q.pc);
        let empty_q = Shape::of(&trace(1, 0), Action::Queue);
        assert!(!empty_q.has_sector(), "a flush prints no position");
        let pc_issue = Shape::of(&trace((category::PC << 16) | 7, 4096), Action::Issue);
        assert!(pc_issue.pc && pc_issue.pc_bytes && !pc_issue.sized);
        let pc_done = Shape::of(&trace((category::PC << 16) | 8, 0), Action::Complete);
        assert!(pc_done.pc && !pc_done.pc_bytes && !pc_done.completion);
    }

    #[test]
    fn payload_texts() {
        assert_eq!(pdu_hex(&[0x0a, 0xff]), Some("0a ff".to_string()));
        assert_eq!(pdu_hex(&[]), None);
        let name = ProcessName::new(b"caf\xe9");
        assert_eq!(name.text, "caf\u{fffd}");
        assert_eq!(name.raw.as_deref(), Some(&b"caf\xe9"[..]));
        assert!(ProcessName::new(b"fio").raw.is_none());
    }
}
