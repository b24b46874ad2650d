//! The ftrace blk tracer's binary stream (trace_pipe with options/bin), which the capture
//! rewrites as blktrace's per-CPU files: each entry is ftrace's header (pid u32, cpu u32,
//! ts u64), then a struct blk_io_trace and its payload.

use super::blktrace::record::{BlkIoTrace, RECORD_BYTES};

/// ftrace's header before each record.
pub const FTRACE_HEADER: usize = 16;
const MAGIC: u32 = 0x6561_7400;
const MAGIC_MASK: u32 = 0xFFFF_FF00;

/// The whole records found in a window of the stream, column by column.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Indexed {
    /// Where each entry (ftrace's header) starts.
    pub start: Vec<i64>,
    pub pdu_len: Vec<i64>,
    pub cpu: Vec<u32>,
    pub device: Vec<u32>,
    pub pid: Vec<u32>,
    pub time: Vec<u64>,
    /// Where the records stop being whole: the next window starts there.
    pub end: usize,
    /// Where an entry without the blk magic starts (a `[LOST N EVENTS]` line, or garbage).
    pub bad: Option<usize>,
}

/// Find the whole records in buf[at..stop].
pub fn index_records(buf: &[u8], at: usize, stop: usize) -> Indexed {
    let stop = stop.min(buf.len());
    let mut found = Indexed::default();
    let mut at = at;
    while at + FTRACE_HEADER + 4 <= stop {
        let r = at + FTRACE_HEADER;
        let magic = u32::from_le_bytes(buf[r..r + 4].try_into().unwrap());
        if magic & MAGIC_MASK != MAGIC {
            found.bad = Some(at);
            break;
        }
        if r + RECORD_BYTES > stop {
            break;
        }
        let trace = BlkIoTrace::read(&buf[r..r + RECORD_BYTES]);
        let pdu_len = usize::from(trace.pdu_len);
        if r + RECORD_BYTES + pdu_len > stop {
            break;
        }
        found.start.push(at as i64);
        found.pdu_len.push(pdu_len as i64);
        found.cpu.push(trace.cpu);
        found.device.push(trace.device);
        found.pid.push(trace.pid);
        found.time.push(trace.time);
        at = r + RECORD_BYTES + pdu_len;
    }
    found.end = at;
    found
}

/// The records at `start` (without ftrace's header) back to back, each with the next sequence
/// number of its device: blktrace numbers events per device and CPU, as the kernel's relay
/// path does. `sequences[d]` is device d's last number, updated.
pub fn renumbered(
    buf: &[u8],
    start: &[i64],
    pdu_len: &[i64],
    device_index: &[i64],
    sequences: &mut [i64],
) -> Vec<u8> {
    let total: i64 = pdu_len.iter().sum::<i64>() + (RECORD_BYTES * start.len()) as i64;
    let mut out = Vec::with_capacity(total as usize);
    for ((&at, &len), &device) in start.iter().zip(pdu_len).zip(device_index) {
        let from = at as usize + FTRACE_HEADER;
        let record = out.len();
        out.extend_from_slice(&buf[from..from + RECORD_BYTES + len as usize]);
        let seq = &mut sequences[device as usize];
        *seq += 1;
        out[record + 4..record + 8].copy_from_slice(&(*seq as u32).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::blktrace::record::tests::record_bytes;

    fn entry(cpu: u32, time: u64, payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(7u32.to_le_bytes());
        b.extend(cpu.to_le_bytes());
        b.extend(time.to_le_bytes());
        b.extend(record_bytes(1, time, 7, payload));
        b
    }

    #[test]
    fn finds_whole_records_and_stops_at_a_torn_one() {
        let mut buf = entry(1, 10, b"ab");
        buf.extend(entry(1, 11, b""));
        let whole = buf.len();
        buf.extend(&entry(1, 12, b"")[..40]);
        let found = index_records(&buf, 0, buf.len());
        assert_eq!(found.start, vec![0, 66]);
        assert_eq!(found.pdu_len, vec![2, 0]);
        assert_eq!(found.time, vec![10, 11]);
        assert_eq!((found.end, found.bad), (whole, None));
    }

    #[test]
    fn reports_where_the_magic_is_missing() {
        let mut buf = entry(0, 10, b"");
        buf.extend(b"CPU:1 [LOST 5 EVENTS]\n");
        buf.extend(entry(0, 11, b""));
        let found = index_records(&buf, 0, buf.len());
        assert_eq!((found.start.len(), found.end, found.bad), (1, 64, Some(64)));
    }

    #[test]
    fn renumbers_per_device() {
        let mut buf = entry(0, 10, b"x");
        buf.extend(entry(0, 11, b""));
        let found = index_records(&buf, 0, buf.len());
        let mut sequences = vec![5, 0];
        let out = renumbered(&buf, &found.start, &found.pdu_len, &[0, 1], &mut sequences);
        assert_eq!(out.len(), 48 + 1 + 48);
        assert_eq!(BlkIoTrace::read(&out).sequence, 6);
        assert_eq!(BlkIoTrace::read(&out[49..]).sequence, 1);
        assert_eq!(sequences, vec![6, 1]);
    }
}
