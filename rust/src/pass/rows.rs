//! The rows the pass writes (`requests`, `bios`, and each bio's Q2Q row for `_bio_stages`),
//! and their Arrow columns, typed as `src/blkscope/schemas/` declares them (Python puts the
//! declared schema, with its docs, over them).

use std::panic::RefUnwindSafe;
use std::sync::Arc;

use arrow_array::types::{ArrowPrimitiveType, Int32Type, Int64Type};
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Int32Array, PrimitiveArray, RecordBatch, StringArray,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, NullBuffer, OffsetBuffer};
use arrow_schema::{ArrowError, Field, Schema};

use super::event::{Op, Remap};
use super::pool::{Pool, Pools};
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

/// Bits being written, one row at a time: 64 at a time into a word, each full word into the
/// bitmap (Arrow's builder checks its length and may grow its buffer at every byte).
struct Bits {
    words: Vec<u64>,
    word: u64,
    len: usize,
}

impl Bits {
    fn with_capacity(n: usize, pools: &Pools) -> Self {
        Bits {
            words: pools.u64.take(n.div_ceil(64)),
            word: 0,
            len: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, v: bool) {
        self.word |= u64::from(v) << (self.len % 64);
        self.len += 1;
        if self.len.is_multiple_of(64) {
            self.words.push(self.word);
            self.word = 0;
        }
    }

    /// The bits as Arrow lays them out (bit i of byte i / 8, on a little-endian machine).
    fn finish(mut self, pools: &Pools) -> BooleanBuffer {
        if !self.len.is_multiple_of(64) {
            self.words.push(self.word);
        }
        let words = pools.u64.lend(self.words).into_inner();
        BooleanBuffer::new(words, 0, self.len)
    }
}

/// An integer column being built, one row at a time.
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

    #[inline(always)]
    fn push(&mut self, v: Option<T::Native>) {
        self.values.push(v.unwrap_or_default());
        self.valid.push(v.is_some());
        self.nulls += usize::from(v.is_none());
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
    fn push(&mut self, v: T::Native) {
        self.0.push(v);
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
    fn push(&mut self, v: bool) {
        self.0.push(v);
    }
    fn finish(self, pools: &Pools) -> ArrayRef {
        Arc::new(BooleanArray::new(self.0.finish(pools), None))
    }
}

/// A string column being built, one row at a time.
struct Strs {
    offsets: Vec<i32>,
    bytes: Vec<u8>,
    valid: Bits,
    nulls: usize,
}

impl Strs {
    fn with_capacity(n: usize, pools: &Pools) -> Self {
        let mut offsets = pools.i32.take(n + 1);
        offsets.push(0);
        Strs {
            offsets,
            bytes: pools.u8.take(4 * n),
            valid: Bits::with_capacity(n, pools),
            nulls: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, v: Option<&str>) {
        if let Some(v) = v {
            self.bytes.extend_from_slice(v.as_bytes());
        }
        self.offsets.push(self.bytes.len() as i32);
        self.valid.push(v.is_some());
        self.nulls += usize::from(v.is_none());
    }

    fn finish(self, pools: &Pools) -> ArrayRef {
        let valid = self.valid.finish(pools);
        let nulls = (self.nulls > 0).then(|| NullBuffer::new(valid));
        // SAFETY (both): the offsets start at 0 and grow with the bytes they index, and every
        // piece is a &str.
        let offsets = unsafe { OffsetBuffer::new_unchecked(pools.i32.lend(self.offsets)) };
        let bytes = pools.u8.lend(self.bytes).into_inner();
        Arc::new(unsafe { StringArray::new_unchecked(offsets, bytes, nulls) })
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
pub fn requests_batch(
    rows: &[RequestRow],
    n: &Names,
    p: &Pools,
) -> Result<RecordBatch, ArrowError> {
    let len = rows.len();
    let (mut major, mut minor) = (
        Values::<Int32Type>::with_capacity(len, p),
        Values::<Int32Type>::with_capacity(len, p),
    );
    let mut op = Strs::with_capacity(len, p);
    let mut sector = Ints::<Int64Type>::with_capacity(len, p);
    let mut nsectors = Ints::<Int32Type>::with_capacity(len, p);
    let mut kind = Strs::with_capacity(len, p);
    let mut flags = Strs::with_capacity(len, p);
    let mut times: [Ints<Int64Type>; 7] = std::array::from_fn(|_| Ints::with_capacity(len, p));
    let mut requeues = Values::<Int32Type>::with_capacity(len, p);
    let mut dispatches = Values::<Int32Type>::with_capacity(len, p);
    let mut error = Ints::<Int32Type>::with_capacity(len, p);
    let mut partial = Bools::with_capacity(len, p);
    let mut pid = Ints::<Int64Type>::with_capacity(len, p);
    let mut process = Strs::with_capacity(len, p);
    let mut d_eid = Ints::<Int64Type>::with_capacity(len, p);
    let mut c_eid = Ints::<Int64Type>::with_capacity(len, p);
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
        ("dev_major", major.finish(p)),
        ("dev_minor", minor.finish(p)),
        ("op", op.finish(p)),
        ("sector", sector.finish(p)),
        ("nsectors", nsectors.finish(p)),
        ("kind", kind.finish(p)),
        ("flags", flags.finish(p)),
        ("q_time_ns", q.finish(p)),
        ("g_time_ns", g.finish(p)),
        ("acct_start_ns", acct.finish(p)),
        ("first_d_time_ns", first_d.finish(p)),
        ("d_time_ns", last_d.finish(p)),
        ("c_time_ns", c.finish(p)),
        ("d2c_ns", d2c.finish(p)),
        ("requeues", requeues.finish(p)),
        ("dispatches", dispatches.finish(p)),
        ("error", error.finish(p)),
        ("partial", partial.finish(p)),
        ("pid", pid.finish(p)),
        ("process", process.finish(p)),
        ("d_eid", d_eid.finish(p)),
        ("c_eid", c_eid.finish(p)),
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
    p: &Pools,
) -> Result<(RecordBatch, RecordBatch), ArrowError> {
    let len = rows.len();
    let (mut major, mut minor) = (
        Values::<Int32Type>::with_capacity(len, p),
        Values::<Int32Type>::with_capacity(len, p),
    );
    let mut op = Strs::with_capacity(len, p);
    let mut flags = Strs::with_capacity(len, p);
    let mut sector = Ints::<Int64Type>::with_capacity(len, p);
    let mut nsectors = Ints::<Int32Type>::with_capacity(len, p);
    let mut pid = Values::<Int64Type>::with_capacity(len, p);
    let mut comm = Strs::with_capacity(len, p);
    // q g m i d c q2c d2c
    let mut times: [Ints<Int64Type>; 8] = std::array::from_fn(|_| Ints::with_capacity(len, p));
    let mut merged = Bools::with_capacity(len, p);
    let mut split = Bools::with_capacity(len, p);
    let mut pieces = Values::<Int32Type>::with_capacity(len, p);
    let mut requeues = Ints::<Int32Type>::with_capacity(len, p);
    let mut status = Strs::with_capacity(len, p);
    let mut partial = Bools::with_capacity(len, p);
    let mut remap_major = Ints::<Int32Type>::with_capacity(len, p);
    let mut remap_minor = Ints::<Int32Type>::with_capacity(len, p);
    let mut remap_sector = Ints::<Int64Type>::with_capacity(len, p);
    let mut q_eid = Values::<Int64Type>::with_capacity(len, p);
    let mut d_eid = Ints::<Int64Type>::with_capacity(len, p);
    let mut base = p.i32.take(len);
    let mut class = p.i32.take(len);
    let mut process = p.i32.take(len);
    let mut group_key = Values::<Int64Type>::with_capacity(len, p);
    let mut gaps: [Ints<Int64Type>; 4] = std::array::from_fn(|_| Ints::with_capacity(len, p));
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
    let [q, g, m, i, d, c, q2c, d2c] = times.map(|c| c.finish(p));
    let (major, minor, merged, q_eid) = (
        major.finish(p),
        minor.finish(p),
        merged.finish(p),
        q_eid.finish(p),
    );
    let bios = batch(vec![
        ("dev_major", major.clone()),
        ("dev_minor", minor.clone()),
        ("op", op.finish(p)),
        ("flags", flags.finish(p)),
        ("sector", sector.finish(p)),
        ("nsectors", nsectors.finish(p)),
        ("pid", pid.finish(p)),
        ("comm", comm.finish(p)),
        ("q_time_ns", q.clone()),
        ("g_time_ns", g.clone()),
        ("m_time_ns", m.clone()),
        ("i_time_ns", i.clone()),
        ("d_time_ns", d.clone()),
        ("c_time_ns", c),
        ("q2c_ns", q2c.clone()),
        ("d2c_ns", d2c.clone()),
        ("merged", merged.clone()),
        ("split", split.finish(p)),
        ("pieces", pieces.finish(p)),
        ("requeues", requeues.finish(p)),
        ("status", status.finish(p)),
        ("partial", partial.finish(p)),
        ("remap_dev_major", remap_major.finish(p)),
        ("remap_dev_minor", remap_minor.finish(p)),
        ("remap_sector", remap_sector.finish(p)),
        ("q_eid", q_eid.clone()),
        ("d_eid", d_eid.finish(p)),
    ])?;
    let [process_ns, class_ns, op_ns, device_ns] = gaps.map(|c| c.finish(p));
    let q2q = batch(vec![
        ("q_eid", q_eid),
        ("dev_major", major),
        ("dev_minor", minor),
        ("op_base", dictionary(base, &classes.base_names, p)?),
        ("op_class", dictionary(class, &classes.class_names, p)?),
        ("process", dictionary(process, n.comm.values(), p)?),
        ("group_key", group_key.finish(p)),
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
    fn bits_written_a_word_at_a_time_are_arrows_bitmap() {
        let pools = Pools::default();
        for n in [0, 1, 63, 64, 65, 200] {
            let pattern = |i: usize| i.is_multiple_of(3) || i % 7 == 1;
            let mut bits = Bits::with_capacity(n, &pools);
            (0..n).for_each(|i| bits.push(pattern(i)));
            let expected: BooleanBuffer = (0..n).map(pattern).collect();
            assert_eq!(bits.finish(&pools), expected, "{n} bits");
        }
    }

    #[test]
    fn columns_with_and_without_nulls() {
        let pools = Pools::default();
        let mut ints = Ints::<Int64Type>::with_capacity(3, &pools);
        [Some(5), None, Some(-7)]
            .into_iter()
            .for_each(|v| ints.push(v));
        let ints = ints.finish(&pools);
        let expected: PrimitiveArray<Int64Type> = [Some(5), None, Some(-7)].into_iter().collect();
        assert_eq!(ints.as_ref(), &expected as &dyn arrow_array::Array);
        let mut strs = Strs::with_capacity(1, &pools); // grows past its first capacity
        ["completed", "merged"]
            .into_iter()
            .for_each(|v| strs.push(Some(v)));
        strs.push(None);
        let strs = strs.finish(&pools);
        let expected: StringArray = [Some("completed"), Some("merged"), None]
            .into_iter()
            .collect();
        assert_eq!(strs.as_ref(), &expected as &dyn arrow_array::Array);
        let mut full = Ints::<Int32Type>::with_capacity(2, &pools);
        [Some(1), Some(2)].into_iter().for_each(|v| full.push(v));
        assert_eq!(full.finish(&pools).null_count(), 0);
    }
}
