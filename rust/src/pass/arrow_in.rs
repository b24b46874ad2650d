//! The events as they arrive: one Arrow record batch of `events.parquet`'s columns (a row
//! group at a time, in time order), read in place. Its strings come dictionary-encoded (as
//! Parquet stores them): only each batch's small dictionary is looked up.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowPrimitiveType, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt8Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, DictionaryArray, StringArray, StructArray};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::event::{Action, Event, Op, Remap};
use super::strings::Dictionary;

/// The columns of `events` the pass reads.
pub const COLUMNS: [&str; 18] = [
    "time_ns",
    "input_id",
    "line_no",
    "dev_major",
    "dev_minor",
    "action",
    "op",
    "flush",
    "rwbs",
    "sector",
    "nsectors",
    "split_sector",
    "remap_dev_major",
    "remap_dev_minor",
    "remap_sector",
    "error",
    "pid",
    "comm",
];

/// An integer column's values, in the width it came in.
enum IntValues {
    I64(ScalarBuffer<i64>),
    I32(ScalarBuffer<i32>),
    I16(ScalarBuffer<i16>),
    I8(ScalarBuffer<i8>),
    U32(ScalarBuffer<u32>),
    U16(ScalarBuffer<u16>),
    U8(ScalarBuffer<u8>),
}

/// An integer column of any width, with its nulls.
struct Ints {
    values: IntValues,
    nulls: Option<NullBuffer>,
}

fn values<T: ArrowPrimitiveType>(array: &ArrayRef) -> ScalarBuffer<T::Native> {
    array.as_primitive::<T>().values().clone()
}

impl Ints {
    fn new(name: &str, array: ArrayRef) -> Result<Ints, String> {
        let values = match array.data_type() {
            DataType::Int64 => IntValues::I64(values::<Int64Type>(&array)),
            DataType::Int32 => IntValues::I32(values::<Int32Type>(&array)),
            DataType::Int16 => IntValues::I16(values::<Int16Type>(&array)),
            DataType::Int8 => IntValues::I8(values::<Int8Type>(&array)),
            DataType::UInt32 => IntValues::U32(values::<UInt32Type>(&array)),
            DataType::UInt16 => IntValues::U16(values::<UInt16Type>(&array)),
            DataType::UInt8 => IntValues::U8(values::<UInt8Type>(&array)),
            other => return Err(format!("events.{name}: expected integers, got {other}")),
        };
        Ok(Ints {
            values,
            nulls: array.logical_nulls(),
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<i64> {
        if self.nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            return None;
        }
        Some(match &self.values {
            IntValues::I64(v) => v[i],
            IntValues::I32(v) => i64::from(v[i]),
            IntValues::I16(v) => i64::from(v[i]),
            IntValues::I8(v) => i64::from(v[i]),
            IntValues::U32(v) => i64::from(v[i]),
            IntValues::U16(v) => i64::from(v[i]),
            IntValues::U8(v) => i64::from(v[i]),
        })
    }
}

/// A dictionary-encoded string column: each row's dictionary index, and per index what the
/// pass makes of that string.
struct Coded<T: Copy> {
    keys: arrow_array::Int32Array,
    per_value: Vec<T>,
}

impl<T: Copy> Coded<T> {
    fn new(
        name: &str,
        array: &ArrayRef,
        mut of: impl FnMut(Option<&str>) -> T,
    ) -> Result<Coded<T>, String> {
        let dict = array
            .as_any()
            .downcast_ref::<DictionaryArray<Int32Type>>()
            .ok_or_else(|| {
                format!(
                    "events.{name}: expected dictionary<int32, string>, got {}",
                    array.data_type()
                )
            })?;
        let values = dict
            .values()
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| format!("events.{name}: the dictionary's values are not strings"))?;
        let mut per_value: Vec<T> = (0..values.len())
            .map(|j| of((!values.is_null(j)).then(|| values.value(j))))
            .collect();
        per_value.push(of(None)); // a null row: the last entry
        Ok(Coded {
            keys: dict.keys().clone(),
            per_value,
        })
    }

    #[inline]
    fn get(&self, i: usize) -> T {
        if self.keys.is_null(i) {
            return *self.per_value.last().expect("the null entry");
        }
        self.per_value[self.keys.value(i) as usize]
    }
}

/// One batch of events, readable row by row.
pub struct Batch {
    pub len: usize,
    time: Ints,
    input: Ints,
    line: Ints,
    major: Ints,
    minor: Ints,
    action: Coded<Option<Action>>,
    op: Coded<Op>,
    flush: BooleanArray,
    rwbs: Coded<Option<u32>>,
    sector: Ints,
    nsectors: Ints,
    split: Ints,
    remap_major: Ints,
    remap_minor: Ints,
    remap_sector: Ints,
    error: Ints,
    pid: Ints,
    comm: Coded<Option<u32>>,
}

impl Batch {
    /// Read a batch's columns; its RWBS and comm strings get codes of the pass's dictionaries.
    pub fn new(
        columns: &StructArray,
        rwbs: &mut Dictionary,
        comm: &mut Dictionary,
    ) -> Result<Batch, String> {
        let col = |name: &str| {
            columns
                .column_by_name(name)
                .cloned()
                .ok_or_else(|| format!("events has no column {name}"))
        };
        let ints = |name: &str| Ints::new(name, col(name)?);
        let flush = col("flush")?;
        let flush = flush
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| format!("events.flush: expected booleans, got {}", flush.data_type()))?
            .clone();
        Ok(Batch {
            len: columns.len(),
            time: ints("time_ns")?,
            input: ints("input_id")?,
            line: ints("line_no")?,
            major: ints("dev_major")?,
            minor: ints("dev_minor")?,
            action: Coded::new("action", &col("action")?, |s| {
                s.and_then(Action::from_letters)
            })?,
            op: Coded::new("op", &col("op")?, |s| Op::from_letter(s.unwrap_or("")))?,
            flush,
            rwbs: Coded::new("rwbs", &col("rwbs")?, |s| s.map(|s| rwbs.code(s)))?,
            sector: ints("sector")?,
            nsectors: ints("nsectors")?,
            split: ints("split_sector")?,
            remap_major: ints("remap_dev_major")?,
            remap_minor: ints("remap_dev_minor")?,
            remap_sector: ints("remap_sector")?,
            error: ints("error")?,
            pid: ints("pid")?,
            comm: Coded::new("comm", &col("comm")?, |s| s.map(|s| comm.code(s)))?,
        })
    }

    /// Row i's time and event id (input_id << 40 | line_no): the pass's order.
    #[inline]
    pub fn order(&self, i: usize) -> (i64, i64) {
        (
            self.time.get(i).unwrap_or(0),
            (self.input.get(i).unwrap_or(0) << 40) + self.line.get(i).unwrap_or(0),
        )
    }

    #[inline]
    pub fn device(&self, i: usize) -> (i64, i64) {
        (
            self.major.get(i).unwrap_or(0),
            self.minor.get(i).unwrap_or(0),
        )
    }

    /// Row i as an event of device `dev`, or None if the pass skips its action.
    #[inline]
    pub fn event(&self, i: usize, dev: usize) -> Option<Event> {
        let action = self.action.get(i)?;
        let (t, eid) = self.order(i);
        Some(Event {
            t,
            eid,
            dev,
            action,
            op: self.op.get(i),
            flush: !self.flush.is_null(i) && self.flush.value(i),
            rwbs: self.rwbs.get(i),
            sector: self.sector.get(i),
            nsectors: self.nsectors.get(i),
            split: self.split.get(i),
            remap: Remap {
                major: self.remap_major.get(i),
                minor: self.remap_minor.get(i),
                sector: self.remap_sector.get(i),
            },
            error: self.error.get(i),
            pid: self.pid.get(i).unwrap_or(0),
            comm: self.comm.get(i),
        })
    }

    /// Whether row i's action is one the pass follows.
    #[inline]
    pub fn followed(&self, i: usize) -> bool {
        self.action.get(i).is_some()
    }
}
