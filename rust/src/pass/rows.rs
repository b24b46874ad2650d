//! The rows the pass writes (`requests`, `bios`, and each bio's Q2Q row for `_bio_stages`),
//! and their Arrow columns, typed as `src/blkscope/schemas/` declares them (Python puts the
//! declared schema, with its docs, over them), but for the strings: codes into their names,
//! which the Parquet writer stores as the declared strings.

use std::panic::RefUnwindSafe;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Int32Type, Int64Type};
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Int32Array, PrimitiveArray, RecordBatch, StringArray,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, NullBuffer};
use arrow_schema::{ArrowError, Field, Schema};

use super::event::{Op, Remap};
use super::pool::{Pool, Pools};
use super::q2q::{self, OpClasses, UNKNOWN_COMM};
use super::state::Device;
use super::strings::Dictionary;

/// requests.kind
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
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
    /// The names, in the order of the codes.
    pub const NAMES: [&'static str; 5] = ["data", "flush", "flush_end", "bio", "orphan"];

    pub fn code(self) -> u32 {
        match self {
            RequestKind::Data => 0,
            RequestKind::Flush => 1,
            RequestKind::FlushEnd => 2,
            RequestKind::Bio => 3,
            RequestKind::Orphan => 4,
        }
    }

    pub fn name(self) -> &'static str {
        RequestKind::NAMES[self.code() as usize]
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
    /// Its reporting group's index among the stage counts' groups (`StageCounts::group`): the
    /// pass's own numbering, in no table.
    pub group: u32,
}

impl BioRow {
    pub fn q2c(&self) -> Option<i64> {
        self.c_t.map(|c| c - self.q_t)
    }

    /// bios.status's names, in the order of `status_code`.
    pub const STATUS_NAMES: [&'static str; 3] = ["completed", "merged", "partial"];

    /// bios.status, as its code into STATUS_NAMES.
    pub fn status_code(&self) -> u32 {
        if self.partial {
            2
        } else if self.merged {
            1
        } else {
            0
        }
    }
}

/// What the columns need besides the rows: the devices' numbers and the string dictionaries.
pub struct Names<'a> {
    pub devices: &'a [Device],
    pub rwbs: &'a Dictionary,
    pub comm: &'a Dictionary,
}

/// A column type whose buffers the pass recycles (pool.rs).
trait Pooled: ArrowNativeType + RefUnwindSafe {
    fn pool(pools: &Pools) -> &Pool<Self>;
}

impl Pooled for i64 {
    fn pool(pools: &Pools) -> &Pool<i64> {
        &pools.i64
    }
}

impl Pooled for i32 {
    fn pool(pools: &Pools) -> &Pool<i32> {
        &pools.i32
    }
}

/// The rows are turned into columns a chunk of this many at a time: each column is filled
/// from the chunk in one tight loop (its validity bits one word per chunk), while the chunk's
/// rows stay in the nearest cache across the columns.
pub const CHUNK: usize = 64;

/// Validity or boolean bits, one 64-bit word per chunk of rows (only the last chunk is short).
struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    fn with_capacity(n: usize, pools: &Pools) -> Self {
        Bits {
            words: pools.u64.take(n.div_ceil(64)),
            len: 0,
        }
    }

    /// One chunk's bits: bit j for its row j.
    #[inline(always)]
    fn push_word(&mut self, word: u64, n: usize) {
        debug_assert!(self.len.is_multiple_of(64) && n <= 64);
        self.words.push(word);
        self.len += n;
    }

    /// The bits as Arrow lays them out (bit i of byte i / 8, on a little-endian machine).
    fn finish(self, pools: &Pools) -> BooleanBuffer {
        let words = pools.u64.lend(self.words).into_inner();
        BooleanBuffer::new(words, 0, self.len)
    }
}

/// The word of a chunk's bits: bit j set when `f` holds for its row j.
#[inline(always)]
fn word_of<R>(rows: &[R], f: impl Fn(&R) -> bool) -> u64 {
    rows.iter()
        .enumerate()
        .fold(0, |word, (j, r)| word | (u64::from(f(r)) << j))
}

/// An integer column that may hold nulls.
struct Ints<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    valid: Bits,
    nulls: usize,
}

impl<T: ArrowPrimitiveType> Ints<T>
where
    T::Native: Pooled,
{
    fn with_capacity(n: usize, pools: &Pools) -> Self {
        Ints {
            values: T::Native::pool(pools).take(n),
            valid: Bits::with_capacity(n, pools),
            nulls: 0,
        }
    }

    /// The column's values of a chunk of rows.
    #[inline(always)]
    fn extend<R>(&mut self, rows: &[R], f: impl Fn(&R) -> Option<T::Native>) {
        // one read of each row's value gives both its bit and its slot
        let mut word = 0;
        self.values.extend(rows.iter().enumerate().map(|(j, r)| {
            let v = f(r);
            word |= u64::from(v.is_some()) << j;
            v.unwrap_or_default()
        }));
        self.nulls += rows.len() - word.count_ones() as usize;
        self.valid.push_word(word, rows.len());
    }

    fn finish(self, pools: &Pools) -> ArrayRef {
        let valid = self.valid.finish(pools);
        let nulls = (self.nulls > 0).then(|| NullBuffer::new(valid));
        let values = T::Native::pool(pools).lend(self.values);
        Arc::new(PrimitiveArray::<T>::new(values, nulls))
    }
}

/// An integer column with a value in every row: no validity bits to keep.
struct Values<T: ArrowPrimitiveType>(Vec<T::Native>);

impl<T: ArrowPrimitiveType> Values<T>
where
    T::Native: Pooled,
{
    fn with_capacity(n: usize, pools: &Pools) -> Self {
        Values(T::Native::pool(pools).take(n))
    }

    #[inline(always)]
    fn extend<R>(&mut self, rows: &[R], f: impl Fn(&R) -> T::Native) {
        self.0.extend(rows.iter().map(f));
    }

    fn finish(self, pools: &Pools) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(
            T::Native::pool(pools).lend(self.0),
            None,
        ))
    }
}

fn int32(v: i64) -> i32 {
    // lengths, errors, device numbers and counts come from int32 event columns: they fit
    v as i32
}

struct Bools(Bits);

impl Bools {
    fn with_capacity(n: usize, pools: &Pools) -> Self {
        Bools(Bits::with_capacity(n, pools))
    }

    #[inline(always)]
    fn extend<R>(&mut self, rows: &[R], f: impl Fn(&R) -> bool) {
        self.0.push_word(word_of(rows, f), rows.len());
    }

    fn finish(self, pools: &Pools) -> ArrayRef {
        Arc::new(BooleanArray::new(self.0.finish(pools), None))
    }
}

/// A string column as codes into a few names (op, kind, status names; the RWBS and comm
/// dictionaries): no bytes copied per row, and the writer hashes each name once, not each row
/// (ingest/parquet/columns.rs). It stands for the plain strings the schema declares.
struct Codes(Ints<Int32Type>);

impl Codes {
    fn with_capacity(n: usize, pools: &Pools) -> Self {
        Codes(Ints::with_capacity(n, pools))
    }

    #[inline(always)]
    fn extend<R>(&mut self, rows: &[R], f: impl Fn(&R) -> Option<u32>) {
        self.0.extend(rows, |r| f(r).map(|c| c as i32));
    }

    fn finish<S: AsRef<str>>(self, names: &[S], pools: &Pools) -> Result<ArrayRef, ArrowError> {
        let keys = self.0.finish(pools);
        let values: StringArray = names.iter().map(|s| Some(s.as_ref())).collect();
        Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
            keys.as_primitive::<Int32Type>().clone(),
            Arc::new(values),
        )?))
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

/// The `requests` columns, filled a chunk of rows at a time (`extend`), then made a batch.
pub struct RequestColumns {
    major: Values<Int32Type>,
    minor: Values<Int32Type>,
    op: Codes,
    sector: Ints<Int64Type>,
    nsectors: Ints<Int32Type>,
    kind: Codes,
    flags: Codes,
    /// q g acct first_d last_d c d2c
    times: [Ints<Int64Type>; 7],
    requeues: Values<Int32Type>,
    dispatches: Values<Int32Type>,
    error: Ints<Int32Type>,
    partial: Bools,
    pid: Ints<Int64Type>,
    process: Codes,
    d_eid: Ints<Int64Type>,
    c_eid: Ints<Int64Type>,
    len: usize,
}

impl RequestColumns {
    /// Empty columns with room for `len` rows.
    pub fn with_capacity(len: usize, p: &Pools) -> Self {
        RequestColumns {
            major: Values::with_capacity(len, p),
            minor: Values::with_capacity(len, p),
            op: Codes::with_capacity(len, p),
            sector: Ints::with_capacity(len, p),
            nsectors: Ints::with_capacity(len, p),
            kind: Codes::with_capacity(len, p),
            flags: Codes::with_capacity(len, p),
            times: std::array::from_fn(|_| Ints::with_capacity(len, p)),
            requeues: Values::with_capacity(len, p),
            dispatches: Values::with_capacity(len, p),
            error: Ints::with_capacity(len, p),
            partial: Bools::with_capacity(len, p),
            pid: Ints::with_capacity(len, p),
            process: Codes::with_capacity(len, p),
            d_eid: Ints::with_capacity(len, p),
            c_eid: Ints::with_capacity(len, p),
            len: 0,
        }
    }

    /// The rows held so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Add rows, taken in chunks of CHUNK (only the last one of a batch may be short).
    pub fn extend(&mut self, rows: &[RequestRow], devices: &[Device]) {
        for rows in rows.chunks(CHUNK) {
            self.extend_chunk(rows, devices);
        }
    }

    fn extend_chunk(&mut self, rows: &[RequestRow], devices: &[Device]) {
        self.len += rows.len();
        self.major.extend(rows, |r| int32(devices[r.dev].major));
        self.minor.extend(rows, |r| int32(devices[r.dev].minor));
        self.op.extend(rows, |r| Some(r.op as u32));
        self.sector.extend(rows, |r| r.sector);
        self.nsectors.extend(rows, |r| r.nsectors.map(int32));
        self.kind.extend(rows, |r| Some(r.kind.code()));
        self.flags.extend(rows, |r| r.rwbs);
        let [q, g, acct, first_d, last_d, c, d2c] = &mut self.times;
        q.extend(rows, |r| r.q_t);
        g.extend(rows, |r| r.g_t);
        acct.extend(rows, |r| r.acct_start);
        first_d.extend(rows, |r| r.life.first_d);
        last_d.extend(rows, |r| r.life.last_d);
        c.extend(rows, |r| r.life.c_t);
        d2c.extend(rows, |r| r.life.c_t.zip(r.life.last_d).map(|(c, d)| c - d));
        self.requeues.extend(rows, |r| int32(r.life.requeues));
        self.dispatches.extend(rows, |r| int32(r.life.dispatches));
        self.error.extend(rows, |r| r.life.error.map(int32));
        self.partial.extend(rows, |r| r.partial);
        self.pid.extend(rows, |r| r.pid);
        self.process.extend(rows, |r| r.process);
        self.d_eid.extend(rows, |r| r.life.d_eid);
        self.c_eid.extend(rows, |r| r.life.c_eid);
    }

    /// The columns as a `requests` batch.
    pub fn finish(self, n: &Names, p: &Pools) -> Result<RecordBatch, ArrowError> {
        let [q, g, acct, first_d, last_d, c, d2c] = self.times;
        batch(vec![
            ("dev_major", self.major.finish(p)),
            ("dev_minor", self.minor.finish(p)),
            ("op", self.op.finish(&Op::NAMES, p)?),
            ("sector", self.sector.finish(p)),
            ("nsectors", self.nsectors.finish(p)),
            ("kind", self.kind.finish(&RequestKind::NAMES, p)?),
            ("flags", self.flags.finish(n.rwbs.values(), p)?),
            ("q_time_ns", q.finish(p)),
            ("g_time_ns", g.finish(p)),
            ("acct_start_ns", acct.finish(p)),
            ("first_d_time_ns", first_d.finish(p)),
            ("d_time_ns", last_d.finish(p)),
            ("c_time_ns", c.finish(p)),
            ("d2c_ns", d2c.finish(p)),
            ("requeues", self.requeues.finish(p)),
            ("dispatches", self.dispatches.finish(p)),
            ("error", self.error.finish(p)),
            ("partial", self.partial.finish(p)),
            ("pid", self.pid.finish(p)),
            ("process", self.process.finish(n.comm.values(), p)?),
            ("d_eid", self.d_eid.finish(p)),
            ("c_eid", self.c_eid.finish(p)),
        ])
    }
}

/// `requests` rows as a batch of its columns.
pub fn requests_batch(
    rows: &[RequestRow],
    n: &Names,
    p: &Pools,
) -> Result<RecordBatch, ArrowError> {
    let mut columns = RequestColumns::with_capacity(rows.len(), p);
    columns.extend(rows, n.devices);
    columns.finish(n, p)
}

/// The `bios` columns and their `_bio_q2q` rows (stream/q2q.py BIO_Q2Q), filled a chunk of rows
/// at a time (`extend`), then made two batches: each bio's Q2Q gaps, its reporting group (as
/// strings and as one integer key: device << 48 | class << 32 | comm code) and the stage times
/// `_bio_stages` needs (the same arrays as the bios' columns).
pub struct BioColumns {
    major: Values<Int32Type>,
    minor: Values<Int32Type>,
    op: Codes,
    flags: Codes,
    sector: Ints<Int64Type>,
    nsectors: Ints<Int32Type>,
    pid: Values<Int64Type>,
    comm: Codes,
    /// q g m i d c q2c d2c
    times: [Ints<Int64Type>; 8],
    merged: Bools,
    split: Bools,
    pieces: Values<Int32Type>,
    requeues: Ints<Int32Type>,
    status: Codes,
    partial: Bools,
    remap_major: Ints<Int32Type>,
    remap_minor: Ints<Int32Type>,
    remap_sector: Ints<Int64Type>,
    q_eid: Values<Int64Type>,
    d_eid: Ints<Int64Type>,
    base: Vec<i32>,
    class: Vec<i32>,
    process: Vec<i32>,
    group_key: Values<Int64Type>,
    /// process class op device
    gaps: [Ints<Int64Type>; 4],
    len: usize,
}

impl BioColumns {
    /// Empty columns with room for `len` rows.
    pub fn with_capacity(len: usize, p: &Pools) -> Self {
        BioColumns {
            major: Values::with_capacity(len, p),
            minor: Values::with_capacity(len, p),
            op: Codes::with_capacity(len, p),
            flags: Codes::with_capacity(len, p),
            sector: Ints::with_capacity(len, p),
            nsectors: Ints::with_capacity(len, p),
            pid: Values::with_capacity(len, p),
            comm: Codes::with_capacity(len, p),
            times: std::array::from_fn(|_| Ints::with_capacity(len, p)),
            merged: Bools::with_capacity(len, p),
            split: Bools::with_capacity(len, p),
            pieces: Values::with_capacity(len, p),
            requeues: Ints::with_capacity(len, p),
            status: Codes::with_capacity(len, p),
            partial: Bools::with_capacity(len, p),
            remap_major: Ints::with_capacity(len, p),
            remap_minor: Ints::with_capacity(len, p),
            remap_sector: Ints::with_capacity(len, p),
            q_eid: Values::with_capacity(len, p),
            d_eid: Ints::with_capacity(len, p),
            base: p.i32.take(len),
            class: p.i32.take(len),
            process: p.i32.take(len),
            group_key: Values::with_capacity(len, p),
            gaps: std::array::from_fn(|_| Ints::with_capacity(len, p)),
            len: 0,
        }
    }

    /// The rows held so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Add rows, taken in chunks of CHUNK (only the last one of a batch may be short).
    pub fn extend(&mut self, rows: &[BioRow], devices: &[Device], classes: &OpClasses) {
        for rows in rows.chunks(CHUNK) {
            self.extend_chunk(rows, devices, classes);
        }
    }

    fn extend_chunk(&mut self, rows: &[BioRow], devices: &[Device], classes: &OpClasses) {
        self.len += rows.len();
        self.major.extend(rows, |r| int32(devices[r.dev].major));
        self.minor.extend(rows, |r| int32(devices[r.dev].minor));
        self.op.extend(rows, |r| Some(r.op as u32));
        self.flags.extend(rows, |r| r.rwbs);
        self.sector.extend(rows, |r| r.sector);
        self.nsectors.extend(rows, |r| r.nsectors.map(int32));
        self.pid.extend(rows, |r| r.pid);
        self.comm.extend(rows, |r| r.comm);
        let [q, g, m, i, d, c, q2c, d2c] = &mut self.times;
        q.extend(rows, |r| Some(r.q_t));
        g.extend(rows, |r| r.g_t);
        m.extend(rows, |r| r.m_t);
        i.extend(rows, |r| r.i_t);
        d.extend(rows, |r| r.d_t);
        c.extend(rows, |r| r.c_t);
        q2c.extend(rows, BioRow::q2c);
        d2c.extend(rows, |r| r.d2c);
        self.merged.extend(rows, |r| r.merged);
        self.split.extend(rows, |r| r.pieces > 1);
        self.pieces.extend(rows, |r| int32(r.pieces));
        self.requeues.extend(rows, |r| r.requeues.map(int32));
        self.status.extend(rows, |r| Some(r.status_code()));
        self.partial.extend(rows, |r| r.partial);
        self.remap_major.extend(rows, |r| r.remap.major.map(int32));
        self.remap_minor.extend(rows, |r| r.remap.minor.map(int32));
        self.remap_sector.extend(rows, |r| r.remap.sector);
        self.q_eid.extend(rows, |r| r.q_eid);
        self.d_eid.extend(rows, |r| r.d_eid);
        let [process_gap, class_gap, op_gap, device_gap] = &mut self.gaps;
        process_gap.extend(rows, |r| r.q2q[0]);
        class_gap.extend(rows, |r| r.q2q[1]);
        op_gap.extend(rows, |r| r.q2q[2]);
        device_gap.extend(rows, |r| r.q2q[3]);
        for r in rows {
            let c = classes.of(r.rwbs, r.op as usize, r.sector.is_some());
            let who = r.comm.unwrap_or(UNKNOWN_COMM);
            self.base.push(c.base as i32);
            self.class.push(c.class as i32);
            self.process.push(who as i32);
            self.group_key.0.push(q2q::group_key(r.dev, c, who));
        }
    }

    /// The columns as a `bios` batch and its Q2Q batch.
    pub fn finish(
        self,
        n: &Names,
        classes: &OpClasses,
        p: &Pools,
    ) -> Result<(RecordBatch, RecordBatch), ArrowError> {
        let [q, g, m, i, d, c, q2c, d2c] = self.times.map(|c| c.finish(p));
        let (major, minor, merged, q_eid) = (
            self.major.finish(p),
            self.minor.finish(p),
            self.merged.finish(p),
            self.q_eid.finish(p),
        );
        let bios = batch(vec![
            ("dev_major", major.clone()),
            ("dev_minor", minor.clone()),
            ("op", self.op.finish(&Op::NAMES, p)?),
            ("flags", self.flags.finish(n.rwbs.values(), p)?),
            ("sector", self.sector.finish(p)),
            ("nsectors", self.nsectors.finish(p)),
            ("pid", self.pid.finish(p)),
            ("comm", self.comm.finish(n.comm.values(), p)?),
            ("q_time_ns", q.clone()),
            ("g_time_ns", g.clone()),
            ("m_time_ns", m.clone()),
            ("i_time_ns", i.clone()),
            ("d_time_ns", d.clone()),
            ("c_time_ns", c),
            ("q2c_ns", q2c.clone()),
            ("d2c_ns", d2c.clone()),
            ("merged", merged.clone()),
            ("split", self.split.finish(p)),
            ("pieces", self.pieces.finish(p)),
            ("requeues", self.requeues.finish(p)),
            ("status", self.status.finish(&BioRow::STATUS_NAMES, p)?),
            ("partial", self.partial.finish(p)),
            ("remap_dev_major", self.remap_major.finish(p)),
            ("remap_dev_minor", self.remap_minor.finish(p)),
            ("remap_sector", self.remap_sector.finish(p)),
            ("q_eid", q_eid.clone()),
            ("d_eid", self.d_eid.finish(p)),
        ])?;
        let [process_ns, class_ns, op_ns, device_ns] = self.gaps.map(|c| c.finish(p));
        let q2q = batch(vec![
            ("q_eid", q_eid),
            ("dev_major", major),
            ("dev_minor", minor),
            ("op_base", dictionary(self.base, &classes.base_names, p)?),
            ("op_class", dictionary(self.class, &classes.class_names, p)?),
            ("process", dictionary(self.process, n.comm.values(), p)?),
            ("group_key", self.group_key.finish(p)),
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
}

/// A dictionary-encoded string column: `codes` into `names`.
fn dictionary(codes: Vec<i32>, names: &[String], p: &Pools) -> Result<ArrayRef, ArrowError> {
    let values: StringArray = if names.is_empty() {
        [Some("")].into_iter().collect()
    } else {
        names.iter().map(|s| Some(s.as_str())).collect()
    };
    let keys = Int32Array::new(p.i32.lend(codes), None);
    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
        keys,
        Arc::new(values),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_written_a_chunk_at_a_time_are_arrows_bitmap() {
        let pools = Pools::default();
        for n in [0, 1, 63, 64, 65, 200] {
            let pattern = |i: &usize| i.is_multiple_of(3) || i % 7 == 1;
            let rows: Vec<usize> = (0..n).collect();
            let mut bools = Bools::with_capacity(n, &pools);
            rows.chunks(CHUNK).for_each(|c| bools.extend(c, pattern));
            let expected: BooleanArray = rows.iter().map(|i| Some(pattern(i))).collect();
            let got = bools.finish(&pools);
            assert_eq!(
                got.as_ref(),
                &expected as &dyn arrow_array::Array,
                "{n} bits"
            );
        }
    }

    #[test]
    fn columns_with_and_without_nulls() {
        let pools = Pools::default();
        let values: Vec<Option<i64>> = (0..150)
            .map(|i| (i % 5 != 2).then_some(i * 1000 - 7))
            .collect();
        let mut ints = Ints::<Int64Type>::with_capacity(1, &pools); // grows past its capacity
        values.chunks(CHUNK).for_each(|c| ints.extend(c, |v| *v));
        let expected: PrimitiveArray<Int64Type> = values.iter().copied().collect();
        assert_eq!(
            ints.finish(&pools).as_ref(),
            &expected as &dyn arrow_array::Array
        );
        let codes = [Some(0), Some(2), None, Some(0)];
        let mut strs = Codes::with_capacity(1, &pools);
        strs.extend(&codes, |v| *v);
        let strs = strs.finish(&BioRow::STATUS_NAMES, &pools).unwrap();
        let strs = strs.as_dictionary::<Int32Type>();
        let names = strs.values().as_string::<i32>();
        let strings: Vec<Option<&str>> = strs
            .keys()
            .iter()
            .map(|k| k.map(|k| names.value(k as usize)))
            .collect();
        let expected = [Some("completed"), Some("partial"), None, Some("completed")];
        assert_eq!(strings, expected);
        let mut full = Ints::<Int32Type>::with_capacity(2, &pools);
        full.extend(&[1, 2], |v| Some(*v));
        assert_eq!(full.finish(&pools).null_count(), 0);
    }
}
