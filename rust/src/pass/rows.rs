//! The rows the pass writes (`requests`, `bios`, and each bio's Q2Q row for `_bio_stages`),
//! and their Arrow columns, typed as `src/blkscope/schemas/` declares them (Python puts the
//! declared schema, with its docs, over them).

use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{ArrowError, Field, Schema};

use super::event::{Op, Remap};
use super::q2q::{OpClasses, UNKNOWN_COMM};
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
    pub first_d: Option<i64>,
    pub last_d: Option<i64>,
    pub c_t: Option<i64>,
    pub requeues: i64,
    pub dispatches: i64,
    pub error: Option<i64>,
    pub partial: bool,
    pub pid: Option<i64>,
    pub process: Option<u32>,
    pub d_eid: Option<i64>,
    pub c_eid: Option<i64>,
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

fn i64s<T>(rows: &[T], f: impl Fn(&T) -> Option<i64>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<Int64Array>())
}

/// An int32 column of values that come from int32 event columns (lengths, errors, device
/// numbers, counts): they fit.
fn i32s<T>(rows: &[T], f: impl Fn(&T) -> Option<i64>) -> ArrayRef {
    Arc::new(
        rows.iter()
            .map(|r| f(r).map(|v| v as i32))
            .collect::<Int32Array>(),
    )
}

fn bools<T>(rows: &[T], f: impl Fn(&T) -> bool) -> ArrayRef {
    Arc::new(rows.iter().map(|r| Some(f(r))).collect::<BooleanArray>())
}

fn strs<'a, T>(rows: &[T], f: impl Fn(&T) -> Option<&'a str>) -> ArrayRef {
    Arc::new(rows.iter().map(f).collect::<StringArray>())
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, ArrowError> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
}

/// `requests` rows as a batch of its columns.
pub fn requests_batch(rows: &[RequestRow], n: &Names) -> Result<RecordBatch, ArrowError> {
    batch(vec![
        ("dev_major", i32s(rows, |r| Some(n.devices[r.dev].major))),
        ("dev_minor", i32s(rows, |r| Some(n.devices[r.dev].minor))),
        ("op", strs(rows, |r| Some(r.op.name()))),
        ("sector", i64s(rows, |r| r.sector)),
        ("nsectors", i32s(rows, |r| r.nsectors)),
        ("kind", strs(rows, |r| Some(r.kind.name()))),
        ("flags", strs(rows, |r| r.rwbs.map(|c| n.rwbs.value(c)))),
        ("q_time_ns", i64s(rows, |r| r.q_t)),
        ("g_time_ns", i64s(rows, |r| r.g_t)),
        ("acct_start_ns", i64s(rows, |r| r.acct_start)),
        ("first_d_time_ns", i64s(rows, |r| r.first_d)),
        ("d_time_ns", i64s(rows, |r| r.last_d)),
        ("c_time_ns", i64s(rows, |r| r.c_t)),
        ("d2c_ns", i64s(rows, |r| Some(r.c_t? - r.last_d?))),
        ("requeues", i32s(rows, |r| Some(r.requeues))),
        ("dispatches", i32s(rows, |r| Some(r.dispatches))),
        ("error", i32s(rows, |r| r.error)),
        ("partial", bools(rows, |r| r.partial)),
        ("pid", i64s(rows, |r| r.pid)),
        (
            "process",
            strs(rows, |r| r.process.map(|c| n.comm.value(c))),
        ),
        ("d_eid", i64s(rows, |r| r.d_eid)),
        ("c_eid", i64s(rows, |r| r.c_eid)),
    ])
}

/// `bios` rows as a batch of its columns.
pub fn bios_batch(rows: &[BioRow], n: &Names) -> Result<RecordBatch, ArrowError> {
    batch(vec![
        ("dev_major", i32s(rows, |r| Some(n.devices[r.dev].major))),
        ("dev_minor", i32s(rows, |r| Some(n.devices[r.dev].minor))),
        ("op", strs(rows, |r| Some(r.op.name()))),
        ("flags", strs(rows, |r| r.rwbs.map(|c| n.rwbs.value(c)))),
        ("sector", i64s(rows, |r| r.sector)),
        ("nsectors", i32s(rows, |r| r.nsectors)),
        ("pid", i64s(rows, |r| Some(r.pid))),
        ("comm", strs(rows, |r| r.comm.map(|c| n.comm.value(c)))),
        ("q_time_ns", i64s(rows, |r| Some(r.q_t))),
        ("g_time_ns", i64s(rows, |r| r.g_t)),
        ("m_time_ns", i64s(rows, |r| r.m_t)),
        ("i_time_ns", i64s(rows, |r| r.i_t)),
        ("d_time_ns", i64s(rows, |r| r.d_t)),
        ("c_time_ns", i64s(rows, |r| r.c_t)),
        ("q2c_ns", i64s(rows, BioRow::q2c)),
        ("d2c_ns", i64s(rows, |r| r.d2c)),
        ("merged", bools(rows, |r| r.merged)),
        ("split", bools(rows, |r| r.pieces > 1)),
        ("pieces", i32s(rows, |r| Some(r.pieces))),
        ("requeues", i32s(rows, |r| r.requeues)),
        ("status", strs(rows, |r| Some(r.status()))),
        ("partial", bools(rows, |r| r.partial)),
        ("remap_dev_major", i32s(rows, |r| r.remap.major)),
        ("remap_dev_minor", i32s(rows, |r| r.remap.minor)),
        ("remap_sector", i64s(rows, |r| r.remap.sector)),
        ("q_eid", i64s(rows, |r| Some(r.q_eid))),
        ("d_eid", i64s(rows, |r| r.d_eid)),
    ])
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

/// The `_bio_q2q` rows of these bios (stream/q2q.py BIO_Q2Q): each bio's Q2Q gaps, its
/// reporting group (as strings and as one integer key: device << 48 | class << 32 | comm
/// code) and the stage times `_bio_stages` needs.
pub fn q2q_batch(
    rows: &[BioRow],
    n: &Names,
    classes: &OpClasses,
) -> Result<RecordBatch, ArrowError> {
    let class: Vec<_> = rows
        .iter()
        .map(|r| classes.of(r.rwbs, r.op as usize, r.sector.is_some()))
        .collect();
    let comm: Vec<u32> = rows
        .iter()
        .map(|r| r.comm.unwrap_or(UNKNOWN_COMM))
        .collect();
    let group_key: Int64Array = rows
        .iter()
        .zip(&class)
        .zip(&comm)
        .map(|((r, c), &comm)| {
            Some(((r.dev as i64) << 48) | (i64::from(c.class) << 32) | i64::from(comm))
        })
        .collect();
    let mut columns = vec![
        ("q_eid", i64s(rows, |r| Some(r.q_eid))),
        ("dev_major", i32s(rows, |r| Some(n.devices[r.dev].major))),
        ("dev_minor", i32s(rows, |r| Some(n.devices[r.dev].minor))),
        (
            "op_base",
            dictionary(
                class.iter().map(|c| c.base as i32).collect(),
                &classes.base_names,
            )?,
        ),
        (
            "op_class",
            dictionary(
                class.iter().map(|c| c.class as i32).collect(),
                &classes.class_names,
            )?,
        ),
        (
            "process",
            dictionary(comm.iter().map(|&c| c as i32).collect(), n.comm.values())?,
        ),
        ("group_key", Arc::new(group_key) as ArrayRef),
        ("g_time_ns", i64s(rows, |r| r.g_t)),
        ("i_time_ns", i64s(rows, |r| r.i_t)),
        ("d_time_ns", i64s(rows, |r| r.d_t)),
        ("m_time_ns", i64s(rows, |r| r.m_t)),
        ("merged", bools(rows, |r| r.merged)),
        ("q_time_ns", i64s(rows, |r| Some(r.q_t))),
        ("d2c_ns", i64s(rows, |r| r.d2c)),
        ("q2c_ns", i64s(rows, BioRow::q2c)),
    ];
    for (k, scope) in ["process_ns", "class_ns", "op_ns", "device_ns"]
        .into_iter()
        .enumerate()
    {
        columns.push((scope, i64s(rows, |r| r.q2q[k])));
    }
    batch(columns)
}
