//! struct blk_io_trace, the kernel blk tracer's record (include/uapi/linux/blktrace_api.h),
//! and the per-CPU files of them that blktrace writes: 48 little-endian bytes, then `pdu_len`
//! bytes of payload, record after record.

use super::problem::Problem;
use crate::ingest::action::Action;

pub const RECORD_BYTES: usize = 48;
/// "eat" in the top three bytes of `magic`; the low byte is the version.
const MAGIC: u32 = 0x6561_7400;
const MAGIC_MASK: u32 = 0xFFFF_FF00;
const VERSION: u32 = 0x07;
/// device = major << 20 | minor (the kernel's dev_t).
const DEV_MINOR_BITS: u32 = 20;

/// The category bits (`BLK_TC_*`), the high 16 bits of `action`.
pub mod category {
    pub const WRITE: u32 = 1 << 1;
    pub const FLUSH: u32 = 1 << 2;
    pub const SYNC: u32 = 1 << 3;
    /// SCSI pass-through: blkparse prints its bytes or command instead of a position.
    pub const PC: u32 = 1 << 9;
    pub const NOTIFY: u32 = 1 << 10;
    pub const AHEAD: u32 = 1 << 11;
    pub const META: u32 = 1 << 12;
    pub const DISCARD: u32 = 1 << 13;
    pub const FUA: u32 = 1 << 15;
}

/// A flag of `action`'s low half: the payload starts with an 8-byte cgroup id.
const TA_CGROUP: u32 = 1 << 8;
/// Note codes (`__BLK_TN_*`) of records in the NOTIFY category.
const TN_PROCESS: u8 = 0;
const TN_TIMESTAMP: u8 = 1;
const TN_MESSAGE: u8 = 2;

/// The fixed part of one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkIoTrace {
    pub magic: u32,
    /// Per-CPU event number.
    pub sequence: u32,
    /// Nanoseconds on the trace's clock.
    pub time: u64,
    /// In 512-byte sectors.
    pub sector: u64,
    pub bytes: u32,
    /// category << 16 | flags | action code.
    pub action: u32,
    pub pid: u32,
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
    pub pdu_len: u16,
}

/// What a record is to blkparse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordKind {
    /// An event blkparse prints with this action.
    Event(Action),
    /// A message note, printed as an `m` line.
    Message,
    /// A note naming the process of a pid.
    ProcessName,
    /// A note pairing the trace clock with the wall clock.
    Timestamp,
    /// A note of a code blkparse ignores.
    OtherNote,
    /// An event of a code blkparse does not print (drv data, zone ops, ...).
    Unprinted(u8),
}

impl BlkIoTrace {
    /// Read the 48 bytes at the start of `bytes`.
    pub fn read(bytes: &[u8]) -> BlkIoTrace {
        let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        BlkIoTrace {
            magic: u32_at(0),
            sequence: u32_at(4),
            time: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            pid: u32_at(32),
            device: u32_at(36),
            cpu: u32_at(40),
            error: u16_at(44),
            pdu_len: u16_at(46),
        }
    }

    /// The `BLK_TC_*` bits.
    pub fn category(&self) -> u32 {
        self.action >> 16
    }

    /// The action code: `__BLK_TA_*`, or `__BLK_TN_*` for a note.
    pub fn code(&self) -> u8 {
        self.action as u8
    }

    /// Whether the payload starts with the cgroup id (8 bytes) of the IO.
    pub fn has_cgroup(&self) -> bool {
        self.action & TA_CGROUP != 0
    }

    pub fn kind(&self) -> RecordKind {
        if self.category() & category::NOTIFY != 0 {
            return match self.code() {
                TN_MESSAGE => RecordKind::Message,
                TN_PROCESS => RecordKind::ProcessName,
                TN_TIMESTAMP => RecordKind::Timestamp,
                _ => RecordKind::OtherNote,
            };
        }
        match Action::from_kernel_code(self.code()) {
            Some(action) => RecordKind::Event(action),
            None => RecordKind::Unprinted(self.code()),
        }
    }

    pub fn dev_major(&self) -> i32 {
        (self.device >> DEV_MINOR_BITS) as i32
    }

    pub fn dev_minor(&self) -> i32 {
        (self.device & ((1 << DEV_MINOR_BITS) - 1)) as i32
    }
}

/// A record in its file: where it starts, its fixed part and its payload.
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    /// Its index in the file (for messages about it).
    pub index: usize,
    pub offset: usize,
    pub trace: BlkIoTrace,
    pub payload: &'a [u8],
}

impl<'a> Record<'a> {
    /// The record at `offset` of a file already split by `record_offsets`.
    pub fn at(data: &'a [u8], index: usize, offset: usize) -> Record<'a> {
        let trace = BlkIoTrace::read(&data[offset..offset + RECORD_BYTES]);
        let start = offset + RECORD_BYTES;
        Record {
            index,
            offset,
            trace,
            payload: &data[start..start + usize::from(trace.pdu_len)],
        }
    }

    /// The payload after the cgroup id, when the record has one.
    pub fn payload_after_cgroup(&self) -> &'a [u8] {
        let skip = if self.trace.has_cgroup() { 8 } else { 0 };
        self.payload.get(skip..).unwrap_or(&[])
    }
}

/// Every record of a file, in file order.
pub fn records<'a>(data: &'a [u8], offsets: &'a [usize]) -> impl Iterator<Item = Record<'a>> + 'a {
    offsets
        .iter()
        .enumerate()
        .map(move |(index, &offset)| Record::at(data, index, offset))
}

/// Where each record of a per-CPU file starts, following `pdu_len` from record to record; the
/// first problem when the file is not whole little-endian records of blktrace version 7.
pub fn record_offsets(data: &[u8]) -> Result<Vec<usize>, Problem> {
    let mut offsets = Vec::with_capacity(data.len() / RECORD_BYTES);
    let mut at = 0;
    while at + RECORD_BYTES <= data.len() {
        let pdu_len = usize::from(u16::from_le_bytes([data[at + 46], data[at + 47]]));
        if at + RECORD_BYTES + pdu_len > data.len() {
            break;
        }
        offsets.push(at);
        at += RECORD_BYTES + pdu_len;
    }
    check_magic(data, &offsets, 0)?;
    check_version(data, &offsets, 0)?;
    if data.len() - at >= 4 {
        // The record that did not fit may be garbage rather than cut short: say so first.
        check_magic(data, &[at], offsets.len())?;
        check_version(data, &[at], offsets.len())?;
    }
    if at != data.len() {
        return Err(Problem::Truncated {
            record: offsets.len(),
            offset: at,
            present: data.len() - at,
        });
    }
    Ok(offsets)
}

fn magic_at(data: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(data[offset..offset + 4].try_into().unwrap())
}

/// Every record starts with the magic; a first record whose magic reads right the other way
/// round is from a big-endian machine. `first` is the index of the record at offsets[0].
fn check_magic(data: &[u8], offsets: &[usize], first: usize) -> Result<(), Problem> {
    let bad = offsets
        .iter()
        .enumerate()
        .find(|(_, &o)| magic_at(data, o) & MAGIC_MASK != MAGIC);
    let Some((k, &offset)) = bad else {
        return Ok(());
    };
    let magic = magic_at(data, offset);
    let record = first + k;
    if record == 0 && magic.swap_bytes() & MAGIC_MASK == MAGIC {
        return Err(Problem::BigEndian);
    }
    Err(Problem::BadMagic {
        record,
        offset,
        magic,
    })
}

/// Only version 7 of the record, today's, is read.
fn check_version(data: &[u8], offsets: &[usize], first: usize) -> Result<(), Problem> {
    let bad = offsets
        .iter()
        .enumerate()
        .find(|(_, &o)| magic_at(data, o) & !MAGIC_MASK != VERSION);
    match bad {
        None => Ok(()),
        Some((k, &offset)) => Err(Problem::BadVersion {
            record: first + k,
            version: magic_at(data, offset) & !MAGIC_MASK,
        }),
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A record's bytes: the fixed part with these fields, then the payload.
    pub fn record_bytes(action: u32, time: u64, pid: u32, payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend((MAGIC | VERSION).to_le_bytes());
        b.extend(1u32.to_le_bytes());
        b.extend(time.to_le_bytes());
        b.extend(2048u64.to_le_bytes());
        b.extend(4096u32.to_le_bytes());
        b.extend(action.to_le_bytes());
        b.extend(pid.to_le_bytes());
        b.extend(((8u32 << 20) | 16).to_le_bytes());
        b.extend(1u32.to_le_bytes());
        b.extend(0u16.to_le_bytes());
        b.extend((payload.len() as u16).to_le_bytes());
        b.extend(payload);
        b
    }

    #[test]
    fn reads_the_fields_in_order() {
        let queue = (category::WRITE << 16) | 1;
        let bytes = record_bytes(queue, 77, 42, b"");
        let r = BlkIoTrace::read(&bytes);
        assert_eq!(
            (r.time, r.sector, r.bytes, r.pid, r.cpu),
            (77, 2048, 4096, 42, 1)
        );
        assert_eq!((r.dev_major(), r.dev_minor()), (8, 16));
        assert_eq!(r.kind(), RecordKind::Event(Action::Queue));
    }

    #[test]
    fn kinds_of_records() {
        let note =
            |code: u32| BlkIoTrace::read(&record_bytes((category::NOTIFY << 16) | code, 0, 0, b""));
        assert_eq!(note(0).kind(), RecordKind::ProcessName);
        assert_eq!(note(1).kind(), RecordKind::Timestamp);
        assert_eq!(note(2).kind(), RecordKind::Message);
        assert_eq!(note(3).kind(), RecordKind::OtherNote);
        let drv_data = BlkIoTrace::read(&record_bytes(16, 0, 0, b""));
        assert_eq!(drv_data.kind(), RecordKind::Unprinted(16));
    }

    #[test]
    fn offsets_follow_pdu_len() {
        let mut data = record_bytes(1, 1, 1, b"abc");
        data.extend(record_bytes(1, 2, 1, b""));
        let offsets = record_offsets(&data).unwrap();
        assert_eq!(offsets, vec![0, 51]);
        let all: Vec<_> = records(&data, &offsets).collect();
        assert_eq!(all[0].payload, b"abc");
        assert_eq!(all[1].trace.time, 2);
    }

    #[test]
    fn problems_name_the_record() {
        let good = record_bytes(1, 1, 1, b"");
        let mut data = good.clone();
        data.extend(&good[..30]);
        assert_eq!(
            record_offsets(&data),
            Err(Problem::Truncated {
                record: 1,
                offset: 48,
                present: 30
            })
        );
        let mut garbage = good.clone();
        garbage.extend(b"GARBAGE!");
        assert_eq!(
            record_offsets(&garbage),
            Err(Problem::BadMagic {
                record: 1,
                offset: 48,
                magic: u32::from_le_bytes(*b"GARB")
            })
        );
        let mut swapped = good.clone();
        swapped[..4].copy_from_slice(&(MAGIC | VERSION).to_be_bytes());
        assert_eq!(record_offsets(&swapped), Err(Problem::BigEndian));
        let mut old = good.clone();
        old[0] = 6;
        assert_eq!(
            record_offsets(&old),
            Err(Problem::BadVersion {
                record: 0,
                version: 6
            })
        );
    }
}
