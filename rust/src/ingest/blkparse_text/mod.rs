//! blkparse default-format text in bulk: each line spaced exactly as blkparse prints it
//! becomes an events row here; every other line (summaries, copied or odd lines, errors) is
//! left, as a span of the chunk, to the reference parser (ingest/blkparse/event_line.py). The
//! scanner never guesses: a row it makes renders back to its line byte for byte.

mod header;
mod printf;
mod tail;

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array};
use memchr::memchr;

#[cfg(test)]
use super::events::Vocabulary;
use super::events::{Event, EventColumns};
use header::{columns_in_place, parse_header, Header};
use printf::printable_end;
use tail::{parse_printable_tail, parse_tail, Tail};

/// Lines of a chunk the scanner left to the reference parser: one span per line, except that a
/// run of blank lines is one span (a flood of them must not cost a row each).
#[derive(Default, Debug, PartialEq, Eq)]
pub struct SlowSpans {
    /// The line number of the span's first line.
    pub line_no: Vec<i64>,
    /// Byte offsets in the chunk: the first line's start, the last line's end (its newline).
    pub start: Vec<i64>,
    pub end: Vec<i64>,
}

impl SlowSpans {
    fn push(&mut self, line_no: i64, start: usize, end: usize) {
        self.line_no.push(line_no);
        self.start.push(start as i64);
        self.end.push(end as i64);
    }

    /// Extend the last span to `end` when it is a run of blank lines ending just before `start`.
    fn extends_blank_run(&mut self, last_is_blank: bool, start: usize, end: usize) -> bool {
        match self.end.last_mut() {
            Some(last) if last_is_blank && *last + 1 == start as i64 => {
                *last = end as i64;
                true
            }
            _ => false,
        }
    }

    pub fn columns(self) -> Vec<(&'static str, ArrayRef)> {
        vec![
            (
                "line_no",
                Arc::new(Int64Array::from(self.line_no)) as ArrayRef,
            ),
            ("start", Arc::new(Int64Array::from(self.start))),
            ("end", Arc::new(Int64Array::from(self.end))),
        ]
    }
}

/// A chunk after the scan.
pub struct ScannedChunk {
    pub events: EventColumns,
    pub slow: SlowSpans,
    /// Lines in the chunk (a last line without a newline counts).
    pub lines: i64,
}

/// Scan a chunk of whole lines whose first line is line number `first_line`.
pub fn scan_chunk(data: &[u8], first_line: i64) -> ScannedChunk {
    // blkparse's lines are ~64 bytes, their process names ~10
    let mut events = EventColumns::with_capacity(data.len() / 48 + 1, data.len() / 6);
    let mut slow = SlowSpans::default();
    let mut last_is_blank = false;
    let mut line_no = first_line;
    let mut start = 0;
    while start < data.len() {
        if let Some((event, end)) = event_in_place(data, start, line_no) {
            events.push(&event);
            start = end + 1;
            line_no += 1;
            continue;
        }
        let end = memchr(b'\n', &data[start..]).map_or(data.len(), |k| start + k);
        let line = &data[start..end];
        if let Some(event) = parse_event(line, line_no) {
            events.push(&event);
        } else if !slow.extends_blank_run(last_is_blank && is_blank(line), start, end) {
            slow.push(line_no, start, end);
            last_is_blank = is_blank(line);
        }
        start = end + 1;
        line_no += 1;
    }
    ScannedChunk {
        events,
        slow,
        lines: line_no - first_line,
    }
}

/// A blank line: spaces, tabs and carriage returns only.
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// The event of the line at `start` and where it ends (its newline, or the end of the data),
/// read in one pass when its header columns sit in place: the tail runs to the first byte
/// that is not printable ASCII, and that must be the line's end. Every line this takes,
/// `parse_event` takes the same; the others go to it.
#[inline(always)]
fn event_in_place(data: &[u8], start: usize, line_no: i64) -> Option<(Event<'_>, usize)> {
    let (h, tail_start) = columns_in_place(&data[start..])?;
    let tail_start = start + tail_start;
    let end = printable_end(data, tail_start);
    if end == tail_start || (end < data.len() && data[end] != b'\n') {
        return None;
    }
    let tail = parse_printable_tail(h.action, &data[tail_start..end])?;
    Some((event_of(h, tail, line_no), end))
}

/// The event of one line (no newline), when it is spaced as blkparse prints it.
#[inline(always)]
pub fn parse_event(line: &[u8], line_no: i64) -> Option<Event<'_>> {
    let (h, tail_start) = parse_header(line)?;
    let tail = line.get(tail_start..).filter(|t| !t.is_empty())?;
    Some(event_of(h, parse_tail(h.action, tail)?, line_no))
}

/// The event of a header and the tail read after it.
#[inline(always)]
fn event_of(h: Header, tail: Tail<'_>, line_no: i64) -> Event<'_> {
    let mut event = Event {
        dev_major: h.dev_major,
        dev_minor: h.dev_minor,
        cpu: h.cpu,
        seq: h.seq,
        time_ns: h.time_ns,
        pid: h.pid,
        action: h.action,
        rwbs: h.rwbs,
        sector: None,
        nsectors: None,
        split_sector: None,
        error: None,
        comm: None,
        depth: None,
        line_no,
    };
    match tail {
        Tail::Completion {
            sector,
            nsectors,
            error,
        } => {
            event.sector = Some(sector);
            event.nsectors = Some(nsectors);
            event.error = Some(error);
        }
        Tail::Unplug { comm, depth } => {
            event.comm = Some(comm);
            event.depth = Some(depth);
        }
        Tail::Split {
            sector,
            split_sector,
            comm,
        } => {
            event.sector = Some(sector);
            event.split_sector = Some(split_sector);
            event.comm = Some(comm);
        }
        Tail::Sized {
            sector,
            nsectors,
            comm,
        } => {
            event.sector = Some(sector);
            event.nsectors = Some(nsectors);
            event.comm = Some(comm);
        }
        Tail::CommOnly { comm } => event.comm = Some(comm),
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    // (a `\` line continuation would eat the next line's leading spaces)
    const CHUNK: &[u8] = concat!(
        "  8,0    1        5     0.000102310  4162  Q  WS 1024 + 8 [dd]\n",
        "\n",
        " \t\n",
        "\r\n",
        "garbage\n",
        "  8,0    1        6     0.000200000     0  C  WS 1024 + 8 [0]\n",
        "\n",
        "CPU0 (sda):",
    )
    .as_bytes();

    #[test]
    fn rows_spans_and_line_numbers() {
        let scanned = scan_chunk(CHUNK, 10);
        assert_eq!(scanned.lines, 8);
        assert_eq!(scanned.events.len(), 2);
        let slow = &scanned.slow;
        assert_eq!(
            slow.line_no,
            vec![11, 14, 16, 17],
            "three blank lines are one span"
        );
        let spans: Vec<&[u8]> = (0..4)
            .map(|k| &CHUNK[slow.start[k] as usize..slow.end[k] as usize])
            .collect();
        assert_eq!(
            spans,
            vec![&b"\n \t\n\r"[..], b"garbage", b"", b"CPU0 (sda):"],
        );
    }

    #[test]
    fn a_blank_line_after_another_slow_line_starts_a_span() {
        let scanned = scan_chunk(b"x\n\n\ny\n", 1);
        assert_eq!(scanned.slow.line_no, vec![1, 2, 4]);
        assert_eq!(scanned.lines, 4);
    }

    #[test]
    fn an_event_line_becomes_an_event() {
        let line = b"  8,0    0       10     0.000300000  4162  D  RA 4096 + 8 [cat]";
        let e = parse_event(line, 3).unwrap();
        assert_eq!(
            (e.sector, e.nsectors, e.comm),
            (Some(4096), Some(8), Some("cat"))
        );
        assert_eq!(e.line_no, 3);
        assert!(e.rwbs.readahead);
        let no_tail = b"  8,0    0       10     0.000300000  4162  D  RA ";
        assert_eq!(parse_event(no_tail, 3), None);
    }

    /// The scan as it was before lines were read in place: a newline search, then
    /// `parse_event` on each line.
    fn scan_line_by_line(data: &[u8]) -> Vec<Option<Event<'_>>> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < data.len() {
            let end = memchr(b'\n', &data[start..]).map_or(data.len(), |k| start + k);
            out.push(parse_event(&data[start..end], out.len() as i64 + 1));
            start = end + 1;
        }
        out
    }

    /// Every line read in place is read as `parse_event` reads it alone, on lines blkparse
    /// prints with each byte replaced in turn by bytes that end, pad or break a column.
    #[test]
    fn lines_read_in_place_are_read_as_alone() {
        let lines: [&[u8]; 8] = [
            b"  8,0    1        5     0.000102310  4162  Q  WS 1024 + 8 [dd]",
            b"254,0    0      369     0.000000000  7747  Q  RA 23416664 + 8 [python3]",
            b"  8,16   1 99999999 99999.999999999 99999 UT   N [kworker/1:1H] 2",
            b"  7,0    0        1     0.000000000     0  C  WS 0 [0]",
            b"  8,0    0       10     0.000300000  4162  D FWFSM 4096 + 8 [cat]",
            b"  8,0    1        6     0.000200000     0  C  WS 1024 + 8 [-5]",
            b"  8,0    1        7     0.000200000   100  X  WS 100 / 164 [fio]",
            b"  8,0    1        8     0.000200000   100  P   N [a] b]",
        ];
        let bytes = [
            b' ', b'0', b'7', b'x', b'\n', b'\r', b'\t', b']', b'U', 0x80, 0x7F, 0x1F,
        ];
        let mut checked = 0;
        for line in lines {
            for at in 0..line.len() {
                for &b in &bytes {
                    let mut chunk = line.to_vec();
                    chunk[at] = b;
                    chunk.push(b'\n');
                    chunk.extend_from_slice(line);
                    for data in [&chunk[..], &chunk[..chunk.len() - 1 - line.len()]] {
                        let scanned =
                            scan_chunk(data, 1)
                                .events
                                .finish("blkparse", 0, Vocabulary::Texts);
                        let mut alone = EventColumns::with_capacity(2, 0);
                        for event in scan_line_by_line(data).iter().flatten() {
                            alone.push(event);
                        }
                        let alone = alone.finish("blkparse", 0, Vocabulary::Texts);
                        for ((name, got), (_, want)) in scanned.iter().zip(&alone) {
                            assert!(
                                got.to_data() == want.to_data(),
                                "{name} of {:?}",
                                String::from_utf8_lossy(data)
                            );
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 5000);
    }

    #[test]
    fn a_line_read_in_place_is_the_event_parse_event_reads() {
        let data = concat!(
            "  8,0    1        8     0.000200000   100  U   N [a] b] 12\n",
            "  8,0    1        9     0.000200001   100  Q  WS 12 + 8 [x]",
        )
        .as_bytes();
        let first = event_in_place(data, 0, 1).unwrap();
        let end = memchr(b'\n', data).unwrap();
        assert_eq!(first, (parse_event(&data[..end], 1).unwrap(), end));
        let second = event_in_place(data, end + 1, 2).unwrap();
        assert_eq!(
            second,
            (parse_event(&data[end + 1..], 2).unwrap(), data.len())
        );
        let carriage_return = b"  8,0    1        8     0.000200000   100  Q  WS 12 + 8 [x]\r\n";
        assert_eq!(event_in_place(carriage_return, 0, 1), None);
    }

    #[test]
    fn empty_chunk() {
        let scanned = scan_chunk(b"", 1);
        assert_eq!((scanned.lines, scanned.events.len()), (0, 0));
    }

    /// The scan's speed on a real file, in 4 MiB chunks of whole lines as ingest reads them:
    /// `BLKSCOPE_SCAN_FILE=blkparse.txt cargo test --release -- --ignored --nocapture scan_speed`
    /// (BLKSCOPE_SCAN_ROUNDS: how many times, 5 unless set)
    #[test]
    #[ignore = "a measurement, on a file named by BLKSCOPE_SCAN_FILE"]
    fn scan_speed() {
        let path = std::env::var("BLKSCOPE_SCAN_FILE").expect("BLKSCOPE_SCAN_FILE");
        let data = std::fs::read(path).expect("read the file");
        let mut chunks = Vec::new();
        let mut start = 0;
        while start < data.len() {
            let mut end = (start + (4 << 20)).min(data.len());
            while end < data.len() && data[end - 1] != b'\n' {
                end += 1;
            }
            chunks.push(&data[start..end]);
            start = end;
        }
        // this process's CPU seconds (user + system) from /proc: the machine may be shared
        let cpu_seconds = || {
            let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
            let fields: Vec<&str> = stat.rsplit(") ").next().unwrap().split(' ').collect();
            let ticks: f64 =
                fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
            ticks / 100.0
        };
        let rounds = std::env::var("BLKSCOPE_SCAN_ROUNDS").map_or(5, |r| r.parse().unwrap());
        for _ in 0..rounds {
            let clock = cpu_seconds();
            let (mut lines, mut rows) = (0, 0);
            for chunk in &chunks {
                let scanned = scan_chunk(chunk, lines + 1);
                lines += scanned.lines;
                rows += scanned.events.len();
                std::hint::black_box(scanned.events.finish("blkparse", 0, Vocabulary::Codes));
            }
            let seconds = cpu_seconds() - clock;
            let speed = lines as f64 / seconds / 1e6;
            println!("{lines} lines, {rows} rows in {seconds:.2} CPU s: {speed:.2} M lines/s");
        }
    }
}
