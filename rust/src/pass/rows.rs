//! The rows the pass writes (`requests`, `bios`, and each bio's Q2Q row for `_bio_stages`),
//! and their Arrow columns, typed as `src/blkscope/schemas/` declares them (Python puts the
//! declared schema, with its docs, over them).

use std::sync::Arc;

use arrow_array::builder::{BooleanBufferBuilder, StringBuilder};
use arrow_array::types::{ArrowPrimitiveType, Int32Type, Int64Type};
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Int32Array, PrimitiveArray, RecordBatch, StringArray,
};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, Field, Schema};

use super::event::{Op, Remap};
use super::q2q::{self, OpClasses, UNKNOWN_COMM};
use super::state::Device;
use super::strings::Dictionary;

/// requests.kind
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RequestKind {
    /// A sized or zero-length D..C.
    Data,
    /// A data-less flush: D FN..C FN.
    Flush,
    /// A zero-length C ending a flush sequence (C WS 0 [0]).
    FlushEnd,
    /// A bio-based device's C (no D on the device).
    Bio,
    /// A C without D in a later run of its key (set after the pass).
    Orphan,
}

impl RequestKind {
    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Data => "data",
            RequestKind::Flush => "flush",
            RequestKind::FlushEnd => "flush_end",
            RequestKind::Bio => "bio",
            RequestKind::Orphan => "orphan",
        }
    }
}

/// A request's D..C life, as its D, R and C events tell it: what `state::Request` gathers and
/// its row writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestLife {
    pub first_d: Option<i64>,
    pub last_d: Option<i64>,
    pub c_t: Option<i64>,
    pub requeues: i64,
    pub dispatches: i64,
    pub error: Option<i64>,
    /// Its first D's event id, and its C's.
    pub d_eid: Option<i64>,
    pub c_eid: Option<i64>,
}

/// One `requests` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRow {
    pub dev: usize,
    pub op: Op,
    pub sector: Option<i64>,
    pub nsectors: Option<i64>,
    pub kind: RequestKind,
    pub rwbs: Option<u32>,
    pub q_t: Option<i64>,
    pub g_t: Option<i64>,
    pub acct_start: Option<i64>,
    pub life: RequestLife,
    pub partial: bool,
    pub pid: Option<i64>,
    pub process: Option<u32>,
}

/// A data request without D: 'orphan' if its key had an earlier run (a D after a C) before
/// it, which the pass no longer knows (it forgets a key once nothing of it is in flight), so
/// DuckDB settles it after the pass on those keys' events (stream/run.py ORPHANS_SQL).
#[derive(Clone, Debug)]
pub struct HeldRequest {
    pub row: RequestRow,
    /// Its first event's id, and its C's time (else its first D's).
    pub eid: i64,
    pub fix_t: Option<i64>,
}

/// One `bios` row, with its Q2Q gaps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BioRow {
    pub dev: usize,
    pub op: Op,
    pub rwbs: Option<u32>,
    pub sector: Option<i64>,
    pub nsectors: Option<i64>,
    pub pid: i64,
    pub comm: Option<u32>,
    pub q_t: i64,
    pub g_t: Option<i64>,
    pub m_t: Option<i64>,
    pub i_t: Option<i64>,
    pub d_t: Option<i64>,
    pub c_t: Option<i64>,
    pub d2c: Option<i64>,
    pub merged: bool,
    pub pieces: i64,
    pub requeues: Option<i64>,
    pub partial: bool,
    pub remap: Remap,
    pub q_eid: i64,
    pub d_eid: Option<i64>,
    pub q2q: [Option<i64>; 4],
}

impl BioRow {
    pub fn q2c(&self) -> Option<i64> {
        self.c_t.map(|c| c - self.q_t)
    }

    /// bios.status
    pub fn status(&self) -> &'static str {
        if self.partial {
            "partial"
        } else if self.merged {
            "merged"
        } else {
            "completed"
        }
    }
}

/// What the columns need besides the rows: the devices' numbers and the string dictionaries.
pub struct Names<'a> {
    pub devices: &'a [Device],
    pub rwbs: &'a Dictionary,
    pub comm: &'a Dictionary,
}

/// An integer column being built, one row at a time.
struct Ints<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    valid: BooleanBufferBuilder,
    nulls: usize,
}

impl<T: ArrowPrimitiveType> Ints<T> {
    fn with_capacity(n: usize) -> Self {
        Ints {
            values: Vec::with_capacity(n),
            valid: BooleanBufferBuilder::new(n),
            nulls: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, v: Option<T::Native>) {
        self.values.push(v.unwrap_or_default());
        self.valid.append(v.is_some());
        self.nulls += usize::from(v.is_none());
    }

    fn finish(mut self) -> ArrayRef {
        let nulls = (self.nulls > 0).then(|| NullBuffer::new(self.valid.finish()));
        Arc::new(PrimitiveArray::<T>::new(
            ScalarBuffer::from(self.values),
            nulls,
        ))
    }
}

/// An integer column with a value in every row: no validity bits to keep.
struct Values<T: ArrowPrimitiveType>(Vec<T::Native>);

impl<T: ArrowPrimitiveType> Values<T> {
    fn with_capacity(n: usize) -> Self {
        Values(Vec::with_capacity(n))
    }

    #[inline(always)]
    fn push(&mut self, v: T::Native) {
        self.0.push(v);
    }

    fn finish(self) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(self.0), None))
    }
}

fn int32(v: i64) -> i32 {
    // lengths, errors, device numbers and counts come from int32 event columns: they fit
    v as i32
}

struct Bools(BooleanBufferBuilder);

impl Bools {
    fn with_capacity(n: usize) -> Self {
        Bools(BooleanBufferBuilder::new(n))
    }
    #[inline(always)]
    fn push(&mut self, v: bool) {
        self.0.append(v);
    }
    fn finish(mut self) -> ArrayRef {
        Arc::new(BooleanArray::new(self.0.finish(), None))
    }
}

struct Strs(StringBuilder);

impl Strs {
    fn with_capacity(n: usize) -> Self {
        Strs(StringBuilder::with_capacity(n, 4 * n))
    }
    #[inline(always)]
    fn push(&mut self, v: Option<&str>) {
        self.0.append_option(v);
    }
    fn finish(mut self) -> ArrayRef {
        Arc::new(self.0.finish())
    }
}

/// A record batch of named columns (every field nullable: Python puts the declared schema over
/// it).
pub fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, ArrowError> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
}

/// `requests` rows as a batch of its columns (one pass over the rows).
pub fn requests_batch(rows: &[RequestRow], n: &Names) -> Result<RecordBatch, ArrowError> {
    let len = rows.len();
    let (mut major, mut minor) = (
        Values::<Int32Type>::with_capacity(len),
        Values::<Int32Type>::with_capacity(len),
    );
    let mut op = Strs::with_capacity(len);
    let mut sector = Ints::<Int64Type>::with_capacity(len);
    let mut nsectors = Ints::<Int32Type>::with_capacity(len);
    let mut kind = Strs::with_capacity(len);
    let mut flags = Strs::with_capacity(len);
    let mut times: [Ints<Int64Type>; 7] = std::array::from_fn(|_| Ints::with_capacity(len));
    let mut requeues = Values::<Int32Type>::with_capacity(len);
    let mut dispatches = Values::<Int32Type>::with_capacity(len);
    let mut error = Ints::<Int32Type>::with_capacity(len);
    let mut partial = Bools::with_capacity(len);
    let mut pid = Ints::<Int64Type>::with_capacity(len);
    let mut process = Strs::with_capacity(len);
    let mut d_eid = Ints::<Int64Type>::with_capacity(len);
    let mut c_eid = Ints::<Int64Type>::with_capacity(len);
    for r in rows {
        let device = &n.devices[r.dev];
        let life = &r.life;
        major.push(int32(device.major));
        minor.push(int32(device.minor));
        op.push(Some(r.op.name()));
        sector.push(r.sector);
        nsectors.push(r.nsectors.map(int32));
        kind.push(Some(r.kind.name()));
        flags.push(r.rwbs.map(|c| n.rwbs.value(c)));
        let d2c = life.c_t.zip(life.last_d).map(|(c, d)| c - d);
        for (column, v) in times.iter_mut().zip([
            r.q_t,
            r.g_t,
            r.acct_start,
            life.first_d,
            life.last_d,
            life.c_t,
            d2c,
        ]) {
            column.push(v);
        }
        requeues.push(int32(life.requeues));
        dispatches.push(int32(life.dispatches));
        error.push(life.error.map(int32));
        partial.push(r.partial);
        pid.push(r.pid);
        process.push(r.process.map(|c| n.comm.value(c)));
        d_eid.push(life.d_eid);
        c_eid.push(life.c_eid);
    }
    let [q, g, acct, first_d, last_d, c, d2c] = times;
    batch(vec![
        ("dev_major", major.finish()),
        ("dev_minor", minor.finish()),
        ("op", op.finish()),
        ("sector", sector.finish()),
        ("nsectors", nsectors.finish()),
        ("kind", kind.finish()),
        ("flags", flags.finish()),
        ("q_time_ns", q.finish()),
        ("g_time_ns", g.finish()),
        ("acct_start_ns", acct.finish()),
        ("first_d_time_ns", first_d.finish()),
        ("d_time_ns", last_d.finish()),
        ("c_time_ns", c.finish()),
        ("d2c_ns", d2c.finish()),
        ("requeues", requeues.finish()),
        ("dispatches", dispatches.finish()),
        ("error", error.finish()),
        ("partial", partial.finish()),
        ("pid", pid.finish()),
        ("process", process.finish()),
        ("d_eid", d_eid.finish()),
        ("c_eid", c_eid.finish()),
    ])
}

/// `bios` rows as a batch of its columns, and their `_bio_q2q` rows (stream/q2q.py BIO_Q2Q):
/// each bio's Q2Q gaps, its reporting group (as strings and as one integer key: device << 48
/// | class << 32 | comm code) and the stage times `_bio_stages` needs (the same arrays as the
/// bios' columns).
pub fn bios_batches(
    rows: &[BioRow],
    n: &Names,
    classes: &OpClasses,
) -> Result<(RecordBatch, RecordBatch), ArrowError> {
    let len = rows.len();
    let (mut major, mut minor) = (
        Values::<Int32Type>::with_capacity(len),
        Values::<Int32Type>::with_capacity(len),
    );
    let mut op = Strs::with_capacity(len);
    let mut flags = Strs::with_capacity(len);
    let mut sector = Ints::<Int64Type>::with_capacity(len);
    let mut nsectors = Ints::<Int32Type>::with_capacity(len);
    let mut pid = Values::<Int64Type>::with_capacity(len);
    let mut comm = Strs::with_capacity(len);
    // q g m i d c q2c d2c
    let mut times: [Ints<Int64Type>; 8] = std::array::from_fn(|_| Ints::with_capacity(len));
    let mut merged = Bools::with_capacity(len);
    let mut split = Bools::with_capacity(len);
    let mut pieces = Values::<Int32Type>::with_capacity(len);
    let mut requeues = Ints::<Int32Type>::with_capacity(len);
    let mut status = Strs::with_capacity(len);
    let mut partial = Bools::with_capacity(len);
    let mut remap_major = Ints::<Int32Type>::with_capacity(len);
    let mut remap_minor = Ints::<Int32Type>::with_capacity(len);
    let mut remap_sector = Ints::<Int64Type>::with_capacity(len);
    let mut q_eid = Values::<Int64Type>::with_capacity(len);
    let mut d_eid = Ints::<Int64Type>::with_capacity(len);
    let mut base = Vec::with_capacity(len);
    let mut class = Vec::with_capacity(len);
    let mut process = Vec::with_capacity(len);
    let mut group_key = Values::<Int64Type>::with_capacity(len);
    let mut gaps: [Ints<Int64Type>; 4] = std::array::from_fn(|_| Ints::with_capacity(len));
    for r in rows {
        let device = &n.devices[r.dev];
        major.push(int32(device.major));
        minor.push(int32(device.minor));
        op.push(Some(r.op.name()));
        flags.push(r.rwbs.map(|c| n.rwbs.value(c)));
        sector.push(r.sector);
        nsectors.push(r.nsectors.map(int32));
        pid.push(r.pid);
        comm.push(r.comm.map(|c| n.comm.value(c)));
        let stages = [
            Some(r.q_t),
            r.g_t,
            r.m_t,
            r.i_t,
            r.d_t,
            r.c_t,
            r.q2c(),
            r.d2c,
        ];
        for (column, v) in times.iter_mut().zip(stages) {
            column.push(v);
        }
        merged.push(r.merged);
        split.push(r.pieces > 1);
        pieces.push(int32(r.pieces));
        requeues.push(r.requeues.map(int32));
        status.push(Some(r.status()));
        partial.push(r.partial);
        remap_major.push(r.remap.major.map(int32));
        remap_minor.push(r.remap.minor.map(int32));
        remap_sector.push(r.remap.sector);
        q_eid.push(r.q_eid);
        d_eid.push(r.d_eid);
        let c = classes.of(r.rwbs, r.op as usize, r.sector.is_some());
        let who = r.comm.unwrap_or(UNKNOWN_COMM);
        base.push(c.base as i32);
        class.push(c.class as i32);
        process.push(who as i32);
        group_key.push(q2q::group_key(r.dev, c, who));
        for (column, v) in gaps.iter_mut().zip(r.q2q) {
            column.push(v);
        }
    }
    let [q, g, m, i, d, c, q2c, d2c] = times.map(Ints::finish);
    let (major, minor, merged, q_eid) = (
        major.finish(),
        minor.finish(),
        merged.finish(),
        q_eid.finish(),
    );
    let bios = batch(vec![
        ("dev_major", major.clone()),
        ("dev_minor", minor.clone()),
        ("op", op.finish()),
        ("flags", flags.finish()),
        ("sector", sector.finish()),
        ("nsectors", nsectors.finish()),
        ("pid", pid.finish()),
        ("comm", comm.finish()),
        ("q_time_ns", q.clone()),
        ("g_time_ns", g.clone()),
        ("m_time_ns", m.clone()),
        ("i_time_ns", i.clone()),
        ("d_time_ns", d.clone()),
        ("c_time_ns", c),
        ("q2c_ns", q2c.clone()),
        ("d2c_ns", d2c.clone()),
        ("merged", merged.clone()),
        ("split", split.finish()),
        ("pieces", pieces.finish()),
        ("requeues", requeues.finish()),
        ("status", status.finish()),
        ("partial", partial.finish()),
        ("remap_dev_major", remap_major.finish()),
        ("remap_dev_minor", remap_minor.finish()),
        ("remap_sector", remap_sector.finish()),
        ("q_eid", q_eid.clone()),
        ("d_eid", d_eid.finish()),
    ])?;
    let [process_ns, class_ns, op_ns, device_ns] = gaps.map(Ints::finish);
    let q2q = batch(vec![
        ("q_eid", q_eid),
        ("dev_major", major),
        ("dev_minor", minor),
        ("op_base", dictionary(base, &classes.base_names)?),
        ("op_class", dictionary(class, &classes.class_names)?),
        ("process", dictionary(process, n.comm.values())?),
        ("group_key", group_key.finish()),
        ("g_time_ns", g),
        ("i_time_ns", i),
        ("d_time_ns", d),
        ("m_time_ns", m),
        ("merged", merged),
        ("q_time_ns", q),
        ("d2c_ns", d2c),
        ("q2c_ns", q2c),
        ("process_ns", process_ns),
        ("class_ns", class_ns),
        ("op_ns", op_ns),
        ("device_ns", device_ns),
    ])?;
    Ok((bios, q2q))
}

/// A dictionary-encoded string column: `codes` into `names`.
fn dictionary(codes: Vec<i32>, names: &[String]) -> Result<ArrayRef, ArrowError> {
    let values: StringArray = if names.is_empty() {
        [Some("")].into_iter().collect()
    } else {
        names.iter().map(|s| Some(s.as_str())).collect()
    };
    let keys = Int32Array::from(codes);
    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
        keys,
        Arc::new(values),
    )?))
}
