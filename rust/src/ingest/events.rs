//! Rows of the events table (schemas/events.py declares it), built column by column: the
//! columns both readers, blkparse text and blktrace binaries, fill.

use std::sync::Arc;

use arrow_array::types::{ArrowPrimitiveType, Int32Type, Int64Type};
use arrow_array::{
    ArrayRef, BooleanArray, Int16Array, Int32Array, Int64Array, PrimitiveArray, StringArray,
};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer, OffsetBuffer, ScalarBuffer};

use super::action::Action;
use super::rwbs::Rwbs;

/// One event as blkparse prints it: the header, then what its action prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    pub dev_major: i32,
    pub dev_minor: i32,
    pub cpu: i32,
    pub seq: i64,
    pub time_ns: i64,
    pub pid: i64,
    pub action: Action,
    pub rwbs: Rwbs,
    pub sector: Option<i64>,
    pub nsectors: Option<i32>,
    pub split_sector: Option<i64>,
    pub error: Option<i32>,
    pub comm: Option<&'a str>,
    pub depth: Option<i32>,
    /// The line blkparse prints the event on (the analysis breaks time ties by it).
    pub line_no: i64,
}

/// Validity bits, made only once a row has no value (most columns of most chunks have one on
/// every row or on none).
#[derive(Default)]
struct Validity {
    bits: Option<BooleanBufferBuilder>,
}

impl Validity {
    /// Row `row`'s validity.
    #[inline(always)]
    fn push(&mut self, row: usize, valid: bool) {
        match &mut self.bits {
            Some(bits) => bits.append(valid),
            None if valid => {}
            None => self.first_missing(row),
        }
    }

    #[cold]
    fn first_missing(&mut self, row: usize) {
        let mut bits = BooleanBufferBuilder::new(row * 2 + 64);
        bits.append_n(row, true);
        bits.append(false);
        self.bits = Some(bits);
    }

    fn finish(self) -> Option<NullBuffer> {
        self.bits.map(|mut b| NullBuffer::new(b.finish()))
    }
}

/// A column whose rows may have no value.
struct Optional<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    validity: Validity,
}

impl<T: ArrowPrimitiveType> Optional<T> {
    fn with_capacity(rows: usize) -> Self {
        Optional {
            values: Vec::with_capacity(rows),
            validity: Validity::default(),
        }
    }

    #[inline(always)]
    fn push(&mut self, value: Option<T::Native>) {
        self.validity.push(self.values.len(), value.is_some());
        self.values.push(value.unwrap_or_default());
    }

    fn finish(self) -> ArrayRef {
        let values = ScalarBuffer::from(self.values);
        Arc::new(PrimitiveArray::<T>::new(values, self.validity.finish()))
    }
}

/// A column of text, maybe missing.
struct Texts {
    offsets: Vec<i32>,
    bytes: Vec<u8>,
    validity: Validity,
}

impl Texts {
    fn with_capacity(rows: usize, bytes: usize) -> Texts {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Texts {
            offsets,
            bytes: Vec::with_capacity(bytes),
            validity: Validity::default(),
        }
    }

    #[inline(always)]
    fn push(&mut self, text: Option<&str>) {
        self.validity.push(self.offsets.len() - 1, text.is_some());
        if let Some(text) = text {
            self.bytes.extend_from_slice(text.as_bytes());
        }
        self.offsets.push(self.bytes.len() as i32);
    }

    fn finish(self) -> ArrayRef {
        let offsets = OffsetBuffer::new(ScalarBuffer::from(self.offsets));
        let nulls = self.validity.finish();
        // SAFETY: the offsets grow with the bytes they index, and every piece is a &str.
        Arc::new(unsafe { StringArray::new_unchecked(offsets, self.bytes.into(), nulls) })
    }
}

/// Each row's text from a small vocabulary (the action letters, the RWBS texts).
fn vocabulary_texts(codes: &[u8], vocabulary: &[String]) -> ArrayRef {
    if codes.iter().all(|&c| vocabulary[usize::from(c)].len() == 1) {
        return letters(codes, vocabulary);
    }
    let mut offsets = Vec::with_capacity(codes.len() + 1);
    let mut bytes = Vec::with_capacity(codes.len() * 2);
    offsets.push(0);
    for &code in codes {
        // byte by byte: these texts are too short for a call to memcpy to pay
        for &b in vocabulary[usize::from(code)].as_bytes() {
            bytes.push(b);
        }
        offsets.push(bytes.len() as i32);
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // SAFETY: the offsets grow with the bytes they index, and every piece is a String.
    Arc::new(unsafe { StringArray::new_unchecked(offsets, bytes.into(), None) })
}

/// Each row's text when every one is a single letter: offsets count up by one.
fn letters(codes: &[u8], vocabulary: &[String]) -> ArrayRef {
    let offsets = OffsetBuffer::new(ScalarBuffer::from(
        (0..=codes.len() as i32).collect::<Vec<_>>(),
    ));
    let mut table = [0u8; 256];
    for (k, text) in vocabulary.iter().enumerate() {
        table[k] = text.as_bytes().first().copied().unwrap_or(b'?');
    }
    let bytes: Vec<u8> = codes.iter().map(|&c| table[usize::from(c)]).collect();
    // SAFETY: one offset per letter, and every letter is the ASCII first byte of a String of
    // one byte (checked by the caller).
    Arc::new(unsafe { StringArray::new_unchecked(offsets, bytes.into(), None) })
}

/// Each row's flag of its RWBS code.
fn flags(codes: &[u8], flag: impl Fn(Rwbs) -> bool) -> ArrayRef {
    let bits = BooleanBuffer::collect_bool(codes.len(), |k| flag(Rwbs::from_code(codes[k])));
    Arc::new(BooleanArray::new(bits, None))
}

/// The shared columns of many events.
pub struct EventColumns {
    dev_major: Vec<i32>,
    dev_minor: Vec<i32>,
    cpu: Vec<i32>,
    seq: Vec<i64>,
    time_ns: Vec<i64>,
    pid: Vec<i64>,
    /// The index of each row's action in Action::ALL.
    action: Vec<u8>,
    /// Each row's RWBS code (Rwbs::code): the rwbs and op columns and the flags.
    rwbs: Vec<u8>,
    sector: Optional<Int64Type>,
    nsectors: Optional<Int32Type>,
    split_sector: Optional<Int64Type>,
    error: Optional<Int32Type>,
    comm: Texts,
    depth: Optional<Int32Type>,
    line_no: Vec<i64>,
}

impl EventColumns {
    /// Room for `rows` events whose process names take about `comm_bytes` bytes.
    pub fn with_capacity(rows: usize, comm_bytes: usize) -> EventColumns {
        EventColumns {
            dev_major: Vec::with_capacity(rows),
            dev_minor: Vec::with_capacity(rows),
            cpu: Vec::with_capacity(rows),
            seq: Vec::with_capacity(rows),
            time_ns: Vec::with_capacity(rows),
            pid: Vec::with_capacity(rows),
            action: Vec::with_capacity(rows),
            rwbs: Vec::with_capacity(rows),
            sector: Optional::with_capacity(rows),
            nsectors: Optional::with_capacity(rows),
            split_sector: Optional::with_capacity(rows),
            error: Optional::with_capacity(rows),
            comm: Texts::with_capacity(rows, comm_bytes),
            depth: Optional::with_capacity(rows),
            line_no: Vec::with_capacity(rows),
        }
    }

    pub fn len(&self) -> usize {
        self.line_no.len()
    }

    #[inline(always)]
    pub fn push(&mut self, e: &Event<'_>) {
        self.dev_major.push(e.dev_major);
        self.dev_minor.push(e.dev_minor);
        self.cpu.push(e.cpu);
        self.seq.push(e.seq);
        self.time_ns.push(e.time_ns);
        self.pid.push(e.pid);
        self.action.push(e.action as u8);
        self.rwbs.push(e.rwbs.code());
        self.sector.push(e.sector);
        self.nsectors.push(e.nsectors);
        self.split_sector.push(e.split_sector);
        self.error.push(e.error);
        self.comm.push(e.comm);
        self.depth.push(e.depth);
        self.line_no.push(e.line_no);
    }

    /// The columns by their events-table names, with `source` and `input_id` the same on
    /// every row.
    pub fn finish(self, source: &str, input_id: i16) -> Vec<(&'static str, ArrayRef)> {
        let rows = self.len();
        let letters: Vec<String> = Action::ALL.iter().map(|a| a.letters().into()).collect();
        let rwbs_texts: Vec<String> = (0..128).map(|c| Rwbs::from_code(c).text()).collect();
        let ops: Vec<String> = (0..128)
            .map(|c| Rwbs::from_code(c).op.letter().into())
            .collect();
        vec![
            (
                "dev_major",
                Arc::new(Int32Array::from(self.dev_major)) as ArrayRef,
            ),
            ("dev_minor", Arc::new(Int32Array::from(self.dev_minor))),
            ("cpu", Arc::new(Int32Array::from(self.cpu))),
            ("seq", Arc::new(Int64Array::from(self.seq))),
            ("time_ns", Arc::new(Int64Array::from(self.time_ns))),
            ("pid", Arc::new(Int64Array::from(self.pid))),
            ("action", vocabulary_texts(&self.action, &letters)),
            ("rwbs", vocabulary_texts(&self.rwbs, &rwbs_texts)),
            ("op", vocabulary_texts(&self.rwbs, &ops)),
            ("flush", flags(&self.rwbs, |r| r.preflush)),
            ("fua", flags(&self.rwbs, |r| r.fua)),
            ("readahead", flags(&self.rwbs, |r| r.readahead)),
            ("sync", flags(&self.rwbs, |r| r.sync)),
            ("meta", flags(&self.rwbs, |r| r.meta)),
            ("sector", self.sector.finish()),
            ("nsectors", self.nsectors.finish()),
            ("split_sector", self.split_sector.finish()),
            ("error", self.error.finish()),
            ("comm", self.comm.finish()),
            ("depth", self.depth.finish()),
            ("source", constant_strings(source, rows)),
            ("line_no", Arc::new(Int64Array::from(self.line_no))),
            ("input_id", Arc::new(Int16Array::from(vec![input_id; rows]))),
        ]
    }
}

/// `rows` copies of one string.
pub fn constant_strings(value: &str, rows: usize) -> ArrayRef {
    let offsets = OffsetBuffer::new(ScalarBuffer::from(
        (0..=rows as i32)
            .map(|k| k * value.len() as i32)
            .collect::<Vec<i32>>(),
    ));
    let values = value.as_bytes().repeat(rows);
    Arc::new(StringArray::new(offsets, values.into(), None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::rwbs::Op;
    use arrow_array::Array;

    fn event(line_no: i64, comm: Option<&str>) -> Event<'_> {
        Event {
            dev_major: 8,
            dev_minor: 0,
            cpu: 1,
            seq: 5,
            time_ns: 102_310,
            pid: 4162,
            action: Action::UnplugTimer,
            rwbs: Rwbs {
                sync: true,
                ..Rwbs::plain(Op::Write)
            },
            sector: Some(1024),
            nsectors: Some(8),
            split_sector: None,
            error: None,
            comm,
            depth: None,
            line_no,
        }
    }

    fn strings(cols: &[(&str, ArrayRef)], name: &str) -> Vec<Option<String>> {
        let array = &cols.iter().find(|(n, _)| *n == name).unwrap().1;
        let array = array.as_any().downcast_ref::<StringArray>().unwrap();
        array.iter().map(|s| s.map(String::from)).collect()
    }

    #[test]
    fn columns_hold_the_rows() {
        let mut cols = EventColumns::with_capacity(1, 0);
        cols.push(&event(1, Some("dd")));
        cols.push(&event(2, None));
        let out = cols.finish("blkparse", 3);
        let get = |name: &str| out.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert_eq!(strings(&out, "action"), vec![Some("UT".into()); 2]);
        assert_eq!(
            strings(&out, "op"),
            vec![Some("W".into()); 2],
            "single letters"
        );
        assert_eq!(strings(&out, "rwbs"), vec![Some("WS".into()); 2]);
        assert_eq!(strings(&out, "op"), vec![Some("W".into()); 2]);
        assert_eq!(strings(&out, "comm"), vec![Some("dd".into()), None]);
        assert_eq!(get("split_sector").null_count(), 2);
        assert_eq!(get("sector").null_count(), 0);
        let sync = get("sync");
        assert!(sync
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap()
            .value(1));
        assert_eq!(strings(&out, "source"), vec![Some("blkparse".into()); 2]);
        let ids = get("input_id");
        assert_eq!(
            ids.as_any().downcast_ref::<Int16Array>().unwrap().value(1),
            3
        );
    }

    #[test]
    fn validity_is_made_at_the_first_missing_value() {
        let mut v = Validity::default();
        v.push(0, true);
        assert!(v.bits.is_none());
        v.push(1, false);
        v.push(2, true);
        let nulls = v.finish().unwrap();
        assert_eq!(nulls.iter().collect::<Vec<_>>(), vec![true, false, true]);
    }

    #[test]
    fn constant_strings_of_no_rows() {
        assert_eq!(constant_strings("x", 0).len(), 0);
    }
}
