//! The events as they arrive: one Arrow record batch of `events.parquet`'s columns (a row
//! group at a time, in time order), read in place. Its strings come dictionary-encoded (as
//! Parquet stores them): only each batch's small dictionary is looked up.

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, DictionaryArray, StringArray, StructArray};
use arrow_buffer::NullBuffer;

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

/// A column of the declared type T: its values, borrowed from the batch.
fn values<'a, T: ArrowPrimitiveType>(
    name: &str,
    array: &'a ArrayRef,
) -> Result<&'a [T::Native], String> {
    array
        .as_primitive_opt::<T>()
        .map(|a| a.values().as_ref())
        .ok_or_else(|| {
            format!(
                "events.{name}: expected {}, got {}",
                T::DATA_TYPE,
                array.data_type()
            )
        })
}

/// A column that may hold nulls.
struct Nullable<'a, T> {
    values: &'a [T],
    nulls: Option<NullBuffer>,
}

impl<'a, T: Copy + Into<i64>> Nullable<'a, T> {
    fn new<P: ArrowPrimitiveType<Native = T>>(
        name: &str,
        array: &'a ArrayRef,
    ) -> Result<Self, String> {
        Ok(Nullable {
            values: values::<P>(name, array)?,
            nulls: array.logical_nulls().filter(|n| n.null_count() > 0),
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<i64> {
        match &self.nulls {
            Some(n) if n.is_null(i) => None,
            _ => Some(self.values[i].into()),
        }
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

/// One batch of events, readable row by row: each column in the type `events` declares
/// (Python casts a batch that differs), borrowed from the batch.
pub struct Batch<'a> {
    pub len: usize,
    time: &'a [i64],
    input: &'a [i16],
    line: &'a [i64],
    major: &'a [i32],
    minor: &'a [i32],
    action: Coded<Option<Action>>,
    op: Coded<Op>,
    flush: BooleanArray,
    rwbs: Coded<Option<u32>>,
    sector: Nullable<'a, i64>,
    nsectors: Nullable<'a, i32>,
    split: Nullable<'a, i64>,
    remap_major: Nullable<'a, i32>,
    remap_minor: Nullable<'a, i32>,
    remap_sector: Nullable<'a, i64>,
    error: Nullable<'a, i32>,
    pid: &'a [i64],
    comm: Coded<Option<u32>>,
}

/// The columns of a batch, by name.
pub struct Columns {
    arrays: Vec<ArrayRef>,
}

impl Columns {
    /// The columns the pass reads, in the order of COLUMNS.
    pub fn new(batch: &StructArray) -> Result<Columns, String> {
        let arrays = COLUMNS
            .iter()
            .map(|name| {
                batch
                    .column_by_name(name)
                    .cloned()
                    .ok_or_else(|| format!("events has no column {name}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Columns { arrays })
    }

    fn get(&self, name: &str) -> &ArrayRef {
        &self.arrays[COLUMNS
            .iter()
            .position(|c| *c == name)
            .expect("a column of COLUMNS")]
    }
}

impl<'a> Batch<'a> {
    /// Read a batch's columns; its RWBS and comm strings get codes of the pass's dictionaries.
    pub fn new(
        columns: &'a Columns,
        rwbs: &mut Dictionary,
        comm: &mut Dictionary,
    ) -> Result<Batch<'a>, String> {
        let col = |name: &str| columns.get(name);
        let not_null = |name: &str| {
            if col(name).null_count() > 0 {
                Err(format!("events.{name} holds nulls"))
            } else {
                Ok(())
            }
        };
        for name in [
            "time_ns",
            "input_id",
            "line_no",
            "dev_major",
            "dev_minor",
            "pid",
        ] {
            not_null(name)?;
        }
        let flush = col("flush");
        let flush = flush
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| format!("events.flush: expected booleans, got {}", flush.data_type()))?
            .clone();
        Ok(Batch {
            len: col("time_ns").len(),
            time: values::<Int64Type>("time_ns", col("time_ns"))?,
            input: values::<Int16Type>("input_id", col("input_id"))?,
            line: values::<Int64Type>("line_no", col("line_no"))?,
            major: values::<Int32Type>("dev_major", col("dev_major"))?,
            minor: values::<Int32Type>("dev_minor", col("dev_minor"))?,
            action: Coded::new("action", col("action"), |s| {
                s.and_then(Action::from_letters)
            })?,
            op: Coded::new("op", col("op"), |s| Op::from_letter(s.unwrap_or("")))?,
            flush,
            rwbs: Coded::new("rwbs", col("rwbs"), |s| s.map(|s| rwbs.code(s)))?,
            sector: Nullable::new::<Int64Type>("sector", col("sector"))?,
            nsectors: Nullable::new::<Int32Type>("nsectors", col("nsectors"))?,
            split: Nullable::new::<Int64Type>("split_sector", col("split_sector"))?,
            remap_major: Nullable::new::<Int32Type>("remap_dev_major", col("remap_dev_major"))?,
            remap_minor: Nullable::new::<Int32Type>("remap_dev_minor", col("remap_dev_minor"))?,
            remap_sector: Nullable::new::<Int64Type>("remap_sector", col("remap_sector"))?,
            error: Nullable::new::<Int32Type>("error", col("error"))?,
            pid: values::<Int64Type>("pid", col("pid"))?,
            comm: Coded::new("comm", col("comm"), |s| s.map(|s| comm.code(s)))?,
        })
    }

    /// Row i's time and event id (input_id << 40 | line_no): the pass's order.
    #[inline]
    pub fn order(&self, i: usize) -> (i64, i64) {
        (
            self.time[i],
            (i64::from(self.input[i]) << 40) + self.line[i],
        )
    }

    #[inline]
    pub fn device(&self, i: usize) -> (i64, i64) {
        (i64::from(self.major[i]), i64::from(self.minor[i]))
    }

    /// Row i's action, None if the pass skips it.
    #[inline]
    pub fn action(&self, i: usize) -> Option<Action> {
        self.action.get(i)
    }

    /// Row i as an event of device `dev` with this action (the split, remap and error columns
    /// read only for the actions that have them).
    #[inline]
    pub fn event(&self, i: usize, dev: usize, action: Action) -> Event {
        let (t, eid) = self.order(i);
        let remap = if action == Action::Remap {
            Remap {
                major: self.remap_major.get(i),
                minor: self.remap_minor.get(i),
                sector: self.remap_sector.get(i),
            }
        } else {
            Remap::default()
        };
        Event {
            t,
            eid,
            dev,
            action,
            op: self.op.get(i),
            flush: !self.flush.is_null(i) && self.flush.value(i),
            rwbs: self.rwbs.get(i),
            sector: self.sector.get(i),
            nsectors: self.nsectors.get(i),
            split: if action == Action::Split {
                self.split.get(i)
            } else {
                None
            },
            remap,
            error: if matches!(action, Action::Complete | Action::Requeue) {
                self.error.get(i)
            } else {
                None
            },
            pid: self.pid[i],
            comm: self.comm.get(i),
        }
    }
}
