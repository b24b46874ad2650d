//! The events as they arrive: one Arrow record batch of `events.parquet`'s columns (a row
//! group at a time, in time order), read in place. Its strings come dictionary-encoded (as
//! Parquet stores them): only each batch's small dictionary is looked up.

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, DictionaryArray, StringArray, StructArray};
use arrow_buffer::{BooleanBuffer, NullBuffer};

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

/// A column's validity bits, read in place.
#[derive(Clone, Copy)]
struct Valid<'a> {
    bits: &'a [u8],
    offset: usize,
}

impl<'a> Valid<'a> {
    /// The bits of an array with nulls (None: it has none).
    fn of(nulls: Option<&'a NullBuffer>) -> Option<Valid<'a>> {
        nulls.filter(|n| n.null_count() > 0).map(|n| Valid {
            bits: n.validity(),
            offset: n.offset(),
        })
    }

    #[inline(always)]
    fn get(&self, i: usize) -> bool {
        let j = i + self.offset;
        (self.bits[j >> 3] >> (j & 7)) & 1 != 0
    }
}

/// A column that may hold nulls.
struct Nullable<'a, T> {
    values: &'a [T],
    valid: Option<Valid<'a>>,
}

impl<'a, T: Copy + Into<i64>> Nullable<'a, T> {
    fn new<P: ArrowPrimitiveType<Native = T>>(
        name: &str,
        array: &'a ArrayRef,
    ) -> Result<Self, String> {
        Ok(Nullable {
            values: values::<P>(name, array)?,
            valid: Valid::of(array.nulls()),
        })
    }

    #[inline(always)]
    fn get(&self, i: usize) -> Option<i64> {
        match self.valid {
            Some(v) if !v.get(i) => None,
            _ => Some(self.values[i].into()),
        }
    }
}

/// Each row of a dictionary-encoded string column decoded into what the pass makes of its
/// string (`of`, asked once per dictionary value and once for a null), into `out`.
fn decode<T: Copy>(
    name: &str,
    array: &ArrayRef,
    out: &mut Vec<T>,
    mut of: impl FnMut(Option<&str>) -> T,
) -> Result<(), String> {
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
    if per_value.is_empty() {
        per_value.push(of(None)); // an empty dictionary: only null rows (keys 0) can point in
    }
    let keys = dict.keys().values();
    // every key in range, a null row's too (Arrow leaves 0 there), else an error: then the
    // loop below indexes without a failure path (one unsigned maximum: a negative key is
    // above every length)
    let top = keys.iter().fold(0u32, |top, &k| top.max(k as u32));
    if top as usize >= per_value.len() {
        return Err(format!("events.{name}: a key outside its dictionary"));
    }
    out.clear();
    // SAFETY: every key is below per_value's length (checked just above)
    out.extend(
        keys.iter()
            .map(|&k| unsafe { *per_value.get_unchecked(k as usize) }),
    );
    if let Some(nulls) = dict.keys().nulls().filter(|n| n.null_count() > 0) {
        let null = of(None);
        each_unset_bit(nulls.inner(), |i| out[i] = null);
    }
    Ok(())
}

/// Call `f` with each row whose bit is not set, in order: a word of 64 bits at a time, so
/// that a column with few nulls costs about one test per 64 rows.
fn each_unset_bit(bits: &BooleanBuffer, mut f: impl FnMut(usize)) {
    let len = bits.len();
    for (w, word) in bits.bit_chunks().iter_padded().enumerate() {
        let base = 64 * w;
        // past the end, the padding's zeros are not rows
        let tail = if len - base < 64 {
            !0u64 << (len - base)
        } else {
            0
        };
        let mut unset = !word & !tail;
        while unset != 0 {
            f(base + unset.trailing_zeros() as usize);
            unset &= unset - 1;
        }
    }
}

/// Each bit of `bits` as a bool, appended to `out` a word of 64 at a time.
fn expand_bits(bits: &BooleanBuffer, out: &mut Vec<bool>) {
    let len = bits.len();
    out.clear();
    out.reserve(len.div_ceil(64) * 64);
    for word in bits.bit_chunks().iter_padded() {
        out.extend((0..64).map(|j| (word >> j) & 1 != 0));
    }
    out.truncate(len);
}

/// The per-row codes of a batch's string columns (and its event ids), decoded once per batch
/// in one loop per column, so that reading an event is plain indexing; kept between batches
/// for their memory.
#[derive(Default)]
pub struct Decoded {
    eid: Vec<i64>,
    action: Vec<Option<Action>>,
    op: Vec<Op>,
    flush: Vec<bool>,
    rwbs: Vec<Option<u32>>,
    comm: Vec<Option<u32>>,
}

/// One batch of events, readable row by row: each column in the type `events` declares
/// (Python casts a batch that differs), borrowed from the batch, and its codes.
pub struct Batch<'a> {
    pub len: usize,
    time: &'a [i64],
    major: &'a [i32],
    minor: &'a [i32],
    sector: Nullable<'a, i64>,
    nsectors: Nullable<'a, i32>,
    split: Nullable<'a, i64>,
    remap_major: Nullable<'a, i32>,
    remap_minor: Nullable<'a, i32>,
    remap_sector: Nullable<'a, i64>,
    error: Nullable<'a, i32>,
    pid: &'a [i64],
    codes: &'a Decoded,
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

impl Decoded {
    /// Decode a batch's event ids and string columns; its RWBS and comm strings get codes of
    /// the pass's dictionaries.
    pub fn fill(
        &mut self,
        columns: &Columns,
        rwbs: &mut Dictionary,
        comm: &mut Dictionary,
    ) -> Result<(), String> {
        let codes = self;
        let col = |name: &str| columns.get(name);
        for name in ["input_id", "line_no"] {
            if col(name).null_count() > 0 {
                return Err(format!("events.{name} holds nulls"));
            }
        }
        let flush = col("flush");
        let flush = flush
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| format!("events.flush: expected booleans, got {}", flush.data_type()))?;
        let input = values::<Int16Type>("input_id", col("input_id"))?;
        let line = values::<Int64Type>("line_no", col("line_no"))?;
        if input.len() != line.len() {
            return Err("events: columns of different lengths".into());
        }
        codes.eid.clear();
        codes.eid.extend(
            input
                .iter()
                .zip(line)
                .map(|(&input, &line)| (i64::from(input) << 40) + line),
        );
        decode("action", col("action"), &mut codes.action, |s| {
            s.and_then(Action::from_letters)
        })?;
        decode("op", col("op"), &mut codes.op, |s| {
            Op::from_letter(s.unwrap_or(""))
        })?;
        decode("rwbs", col("rwbs"), &mut codes.rwbs, |s| {
            s.map(|s| rwbs.code(s))
        })?;
        decode("comm", col("comm"), &mut codes.comm, |s| {
            s.map(|s| comm.code(s))
        })?;
        // a null flush is no flush
        match flush.nulls().filter(|n| n.null_count() > 0) {
            None => expand_bits(flush.values(), &mut codes.flush),
            Some(valid) => expand_bits(&(flush.values() & valid.inner()), &mut codes.flush),
        }
        Ok(())
    }
}

impl<'a> Batch<'a> {
    /// Read a batch's columns, whose codes `codes` decoded (`Decoded::fill`).
    pub fn new(columns: &'a Columns, codes: &'a Decoded) -> Result<Batch<'a>, String> {
        let col = |name: &str| columns.get(name);
        let not_null = |name: &str| {
            if col(name).null_count() > 0 {
                Err(format!("events.{name} holds nulls"))
            } else {
                Ok(())
            }
        };
        for name in ["time_ns", "dev_major", "dev_minor", "pid"] {
            not_null(name)?;
        }
        let time = values::<Int64Type>("time_ns", col("time_ns"))?;
        let len = time.len();
        let batch = Batch {
            len,
            time,
            major: values::<Int32Type>("dev_major", col("dev_major"))?,
            minor: values::<Int32Type>("dev_minor", col("dev_minor"))?,
            sector: Nullable::new::<Int64Type>("sector", col("sector"))?,
            nsectors: Nullable::new::<Int32Type>("nsectors", col("nsectors"))?,
            split: Nullable::new::<Int64Type>("split_sector", col("split_sector"))?,
            remap_major: Nullable::new::<Int32Type>("remap_dev_major", col("remap_dev_major"))?,
            remap_minor: Nullable::new::<Int32Type>("remap_dev_minor", col("remap_dev_minor"))?,
            remap_sector: Nullable::new::<Int64Type>("remap_sector", col("remap_sector"))?,
            error: Nullable::new::<Int32Type>("error", col("error"))?,
            pid: values::<Int64Type>("pid", col("pid"))?,
            codes,
        };
        let lengths = [
            batch.major.len(),
            batch.minor.len(),
            batch.sector.values.len(),
            batch.nsectors.values.len(),
            batch.split.values.len(),
            batch.remap_major.values.len(),
            batch.remap_minor.values.len(),
            batch.remap_sector.values.len(),
            batch.error.values.len(),
            batch.pid.len(),
            codes.action.len(),
            codes.op.len(),
            codes.flush.len(),
            codes.rwbs.len(),
            codes.comm.len(),
        ];
        if lengths.iter().any(|&n| n != len) {
            return Err("events: columns of different lengths".into());
        }
        Ok(batch)
    }

    /// Row i's time and event id (input_id << 40 | line_no): the pass's order.
    #[inline(always)]
    pub fn order(&self, i: usize) -> (i64, i64) {
        (self.time[i], self.codes.eid[i])
    }

    /// Whether the rows come in strictly increasing (time, event id) order after `last` (the
    /// order of the events before them).
    pub fn ordered_after(&self, last: Option<(i64, i64)>) -> bool {
        let (time, eid) = (self.time, self.codes.eid.as_slice());
        let first = match last {
            Some(last) if self.len > 0 => (time[0], eid[0]) > last,
            _ => true,
        };
        first
            && time
                .windows(2)
                .zip(eid.windows(2))
                .all(|(t, e)| (t[1], e[1]) > (t[0], e[0]))
    }

    #[inline(always)]
    pub fn device(&self, i: usize) -> (i64, i64) {
        (i64::from(self.major[i]), i64::from(self.minor[i]))
    }

    #[inline(always)]
    pub fn pid(&self, i: usize) -> i64 {
        self.pid[i]
    }

    /// Row i's action, None if the pass skips it.
    #[inline(always)]
    pub fn action(&self, i: usize) -> Option<Action> {
        self.codes.action[i]
    }

    /// Row i as an event of device `dev` with this action (the split, remap and error columns
    /// read only for the actions that have them).
    #[inline(always)]
    pub fn event(&self, i: usize, dev: usize, action: Action) -> Event {
        let remap = if action == Action::Remap {
            Remap {
                major: self.remap_major.get(i),
                minor: self.remap_minor.get(i),
                sector: self.remap_sector.get(i),
            }
        } else {
            Remap::default()
        };
        let codes = self.codes;
        Event {
            t: self.time[i],
            eid: codes.eid[i],
            dev,
            action,
            op: codes.op[i],
            flush: codes.flush[i],
            rwbs: codes.rwbs[i],
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
            comm: codes.comm[i],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_read_a_word_at_a_time_at_any_length_and_offset() {
        for len in [0, 1, 63, 64, 65, 130] {
            for offset in [0, 3] {
                let all: Vec<bool> = (0..len + offset)
                    .map(|i| i % 3 == 0 || i % 7 == 5)
                    .collect();
                let bits = BooleanBuffer::from(all.as_slice()).slice(offset, len);
                let expected: Vec<bool> = all[offset..].to_vec();
                let mut got = vec![true; 3]; // what was there before is replaced
                expand_bits(&bits, &mut got);
                assert_eq!(got, expected, "{len} bits at {offset}");
                let mut unset = Vec::new();
                each_unset_bit(&bits, |i| unset.push(i));
                let expected: Vec<usize> = (0..len).filter(|&i| !expected[i]).collect();
                assert_eq!(unset, expected, "{len} bits at {offset}");
            }
        }
    }
}
