//! Rows of the events table (schemas/events.py declares it), built column by column: the
//! columns both readers, blkparse text and blktrace binaries, fill.

use std::sync::Arc;

use arrow_array::builder::{Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, BooleanArray, Int16Array, Int32Array, Int64Array, StringArray};
use arrow_buffer::{BooleanBufferBuilder, OffsetBuffer, ScalarBuffer};

use super::action::Action;
use super::rwbs::{Rwbs, RwbsTexts};

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

/// The shared columns of many events.
pub struct EventColumns {
    dev_major: Vec<i32>,
    dev_minor: Vec<i32>,
    cpu: Vec<i32>,
    seq: Vec<i64>,
    time_ns: Vec<i64>,
    pid: Vec<i64>,
    action: StringBuilder,
    rwbs: StringBuilder,
    op: StringBuilder,
    flush: BooleanBufferBuilder,
    fua: BooleanBufferBuilder,
    readahead: BooleanBufferBuilder,
    sync: BooleanBufferBuilder,
    meta: BooleanBufferBuilder,
    sector: Int64Builder,
    nsectors: Int32Builder,
    split_sector: Int64Builder,
    error: Int32Builder,
    comm: StringBuilder,
    depth: Int32Builder,
    line_no: Vec<i64>,
    rwbs_texts: RwbsTexts,
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
            action: StringBuilder::with_capacity(rows, rows),
            rwbs: StringBuilder::with_capacity(rows, rows * 2),
            op: StringBuilder::with_capacity(rows, rows),
            flush: BooleanBufferBuilder::new(rows),
            fua: BooleanBufferBuilder::new(rows),
            readahead: BooleanBufferBuilder::new(rows),
            sync: BooleanBufferBuilder::new(rows),
            meta: BooleanBufferBuilder::new(rows),
            sector: Int64Builder::with_capacity(rows),
            nsectors: Int32Builder::with_capacity(rows),
            split_sector: Int64Builder::with_capacity(rows),
            error: Int32Builder::with_capacity(rows),
            comm: StringBuilder::with_capacity(rows, comm_bytes),
            depth: Int32Builder::with_capacity(rows),
            line_no: Vec::with_capacity(rows),
            rwbs_texts: RwbsTexts::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.line_no.len()
    }

    pub fn push(&mut self, e: &Event<'_>) {
        self.dev_major.push(e.dev_major);
        self.dev_minor.push(e.dev_minor);
        self.cpu.push(e.cpu);
        self.seq.push(e.seq);
        self.time_ns.push(e.time_ns);
        self.pid.push(e.pid);
        self.action.append_value(e.action.letters());
        self.rwbs.append_value(self.rwbs_texts.get(e.rwbs));
        self.op.append_value(e.rwbs.op.letter());
        self.flush.append(e.rwbs.preflush);
        self.fua.append(e.rwbs.fua);
        self.readahead.append(e.rwbs.readahead);
        self.sync.append(e.rwbs.sync);
        self.meta.append(e.rwbs.meta);
        self.sector.append_option(e.sector);
        self.nsectors.append_option(e.nsectors);
        self.split_sector.append_option(e.split_sector);
        self.error.append_option(e.error);
        self.comm.append_option(e.comm);
        self.depth.append_option(e.depth);
        self.line_no.push(e.line_no);
    }

    /// The columns by their events-table names, with `source` and `input_id` the same on
    /// every row.
    pub fn finish(mut self, source: &str, input_id: i16) -> Vec<(&'static str, ArrayRef)> {
        let rows = self.len();
        let bools = |b: &mut BooleanBufferBuilder| -> ArrayRef {
            Arc::new(BooleanArray::new(b.finish(), None))
        };
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
            ("action", Arc::new(self.action.finish())),
            ("rwbs", Arc::new(self.rwbs.finish())),
            ("op", Arc::new(self.op.finish())),
            ("flush", bools(&mut self.flush)),
            ("fua", bools(&mut self.fua)),
            ("readahead", bools(&mut self.readahead)),
            ("sync", bools(&mut self.sync)),
            ("meta", bools(&mut self.meta)),
            ("sector", Arc::new(self.sector.finish())),
            ("nsectors", Arc::new(self.nsectors.finish())),
            ("split_sector", Arc::new(self.split_sector.finish())),
            ("error", Arc::new(self.error.finish())),
            ("comm", Arc::new(self.comm.finish())),
            ("depth", Arc::new(self.depth.finish())),
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
            action: Action::Queue,
            rwbs: Rwbs::plain(Op::Write),
            sector: Some(1024),
            nsectors: Some(8),
            split_sector: None,
            error: None,
            comm,
            depth: None,
            line_no,
        }
    }

    #[test]
    fn columns_hold_the_rows() {
        let mut cols = EventColumns::with_capacity(1, 0);
        cols.push(&event(1, Some("dd")));
        cols.push(&event(2, None));
        let out = cols.finish("blkparse", 3);
        let get = |name: &str| out.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert_eq!(
            get("rwbs")
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap()
                .value(1),
            "W"
        );
        let comm = get("comm");
        assert_eq!(comm.null_count(), 1);
        assert_eq!(get("split_sector").null_count(), 2);
        let source = get("source");
        let source = source.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((source.value(0), source.value(1)), ("blkparse", "blkparse"));
        let ids = get("input_id");
        assert_eq!(
            ids.as_any().downcast_ref::<Int16Array>().unwrap().value(1),
            3
        );
    }

    #[test]
    fn constant_strings_of_no_rows() {
        assert_eq!(constant_strings("x", 0).len(), 0);
    }
}
