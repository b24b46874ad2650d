//! One Arrow column as a Parquet column chunk's page bodies: definition levels, then the values
//! of the rows that have one, as the column's encoding says; min/max on the way.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::dictionary::Dictionary;
use super::encode::{bit_pack, bit_width, delta_binary_packed, hybrid, hybrid_run};
use super::{ColumnSpec, ValueEncoding};

// Parquet's value encodings (parquet.thrift).
pub const PLAIN: i32 = 0;
pub const RLE: i32 = 3;
pub const DELTA_BINARY_PACKED: i32 = 5;
pub const RLE_DICTIONARY: i32 = 8;

/// A chunk's statistics: min and max as Parquet's plain bytes (none when every row is null).
pub struct Statistics {
    pub min_max: Option<(Vec<u8>, Vec<u8>)>,
    pub null_count: i64,
}

/// Buffers a file keeps from chunk to chunk, so each chunk writes into memory already mapped.
#[derive(Default)]
pub struct Scratch {
    pub data: Vec<u8>,
    pub dictionary: Vec<u8>,
    levels: Vec<u32>,
    codes: Vec<u32>,
    i32s: Vec<i32>,
    i64s: Vec<i64>,
}

/// What encoding a chunk wrote into the scratch's `data` (and `dictionary`).
pub struct Encoded {
    /// The dictionary's entries, when the chunk has a dictionary page.
    pub dictionary_entries: Option<usize>,
    pub encoding: i32,
    pub statistics: Option<Statistics>,
}

/// Encode `array` as `spec` says into `scratch.data` (and `scratch.dictionary`).
pub fn encode_chunk(spec: &ColumnSpec, array: &ArrayRef, scratch: &mut Scratch) -> Encoded {
    scratch.data.clear();
    if spec.nullable {
        definition_levels(array, scratch);
    }
    let null_count = array.null_count() as i64;
    let mut encoded = Encoded {
        dictionary_entries: None,
        encoding: PLAIN,
        statistics: spec.statistics.then_some(Statistics {
            min_max: None,
            null_count,
        }),
    };
    if array.null_count() == array.len() {
        return encoded;
    }
    let data = &mut scratch.data;
    match array.data_type() {
        DataType::Utf8 | DataType::Binary => {
            if spec.encoding == ValueEncoding::Dictionary {
                encoded.dictionary_entries = Some(dictionary_indices(array, scratch));
                encoded.encoding = RLE_DICTIONARY;
            } else {
                for_each_bytes(array, |v| {
                    data.extend_from_slice(&(v.len() as u32).to_le_bytes());
                    data.extend_from_slice(v);
                });
            }
        }
        DataType::Dictionary(..) => {
            encoded.dictionary_entries = Some(arrow_dictionary(array, scratch));
            encoded.encoding = RLE_DICTIONARY;
        }
        DataType::Boolean => plain_booleans(array, data),
        DataType::Int64 => {
            let values = present_i64(array, &mut scratch.i64s);
            write_ints(spec, values, data, &mut encoded);
        }
        _ => {
            let values = present_i32(array, &mut scratch.i32s);
            write_ints(spec, values, data, &mut encoded);
        }
    }
    encoded
}

/// Integers as DELTA_BINARY_PACKED or PLAIN, with their min and max when asked for.
fn write_ints<T: IntValue>(spec: &ColumnSpec, values: &[T], data: &mut Vec<u8>, e: &mut Encoded) {
    if spec.encoding == ValueEncoding::Delta {
        delta_binary_packed(data, values);
        e.encoding = DELTA_BINARY_PACKED;
    } else {
        for v in values {
            v.put_plain(data);
        }
    }
    if let Some(s) = &mut e.statistics {
        if let (Some(lo), Some(hi)) = (values.iter().min(), values.iter().max()) {
            let (mut min, mut max) = (Vec::new(), Vec::new());
            lo.put_plain(&mut min);
            hi.put_plain(&mut max);
            s.min_max = Some((min, max));
        }
    }
}

/// An integer as Parquet stores it.
trait IntValue: Copy + Ord + super::encode::DeltaInt {
    fn put_plain(self, out: &mut Vec<u8>);
}

impl IntValue for i32 {
    fn put_plain(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

impl IntValue for i64 {
    fn put_plain(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

/// Definition levels (the v1 data page's: a 4-byte length, then the hybrid at width 1); a
/// column with no nulls, or only nulls, is one run.
fn definition_levels(array: &ArrayRef, scratch: &mut Scratch) {
    let out = &mut scratch.data;
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    let rows = array.len();
    match array.nulls() {
        None => hybrid_run(out, 1, rows, 1),
        Some(nulls) if nulls.null_count() == rows => hybrid_run(out, 0, rows, 1),
        Some(nulls) => {
            scratch.levels.clear();
            scratch.levels.extend(nulls.iter().map(u32::from));
            hybrid(out, &scratch.levels, 1);
        }
    }
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// The values of rows that have one: the column's own slice when it has no nulls.
fn present<'a, T: Copy>(values: &'a [T], array: &ArrayRef, into: &'a mut Vec<T>) -> &'a [T] {
    match array.nulls() {
        None => values,
        Some(nulls) => {
            into.clear();
            into.extend(
                values
                    .iter()
                    .zip(nulls.iter())
                    .filter_map(|(&v, valid)| valid.then_some(v)),
            );
            into
        }
    }
}

fn present_i64<'a>(array: &'a ArrayRef, into: &'a mut Vec<i64>) -> &'a [i64] {
    present(array.as_primitive::<Int64Type>().values(), array, into)
}

/// INT32's values: int32 as they are, int16 widened.
fn present_i32<'a>(array: &'a ArrayRef, into: &'a mut Vec<i32>) -> &'a [i32] {
    if let DataType::Int16 = array.data_type() {
        let narrow = array.as_primitive::<Int16Type>();
        into.clear();
        into.extend(
            (0..narrow.len())
                .filter(|&k| narrow.is_valid(k))
                .map(|k| i32::from(narrow.value(k))),
        );
        return into;
    }
    present(array.as_primitive::<Int32Type>().values(), array, into)
}

/// Each present value's bytes (utf8 or binary), straight from the offsets.
fn for_each_bytes<'a>(array: &'a ArrayRef, mut f: impl FnMut(&'a [u8])) {
    let (offsets, bytes) = match array.data_type() {
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            (a.value_offsets(), a.value_data())
        }
        _ => {
            let a = array.as_binary::<i32>();
            (a.value_offsets(), a.value_data())
        }
    };
    let nulls = array.nulls();
    for (k, w) in offsets.windows(2).enumerate() {
        if nulls.is_none_or(|n| n.is_valid(k)) {
            f(&bytes[w[0] as usize..w[1] as usize]);
        }
    }
}

/// The dictionary page into `scratch.dictionary` and the RLE_DICTIONARY indices (a byte of bit
/// width, then the hybrid) into `scratch.data`; returns the dictionary's entries.
fn dictionary_indices(array: &ArrayRef, scratch: &mut Scratch) -> usize {
    let mut dictionary = Dictionary::new(std::mem::take(&mut scratch.dictionary));
    let codes = &mut scratch.codes;
    codes.clear();
    // a row like the one before (a run of one source, one process) skips the lookup
    let mut last: Option<(&[u8], u32)> = None;
    for_each_bytes(array, |v| {
        let code = match last {
            Some((l, code)) if l == v => code,
            _ => dictionary.index(v),
        };
        last = Some((v, code));
        codes.push(code);
    });
    let entries = dictionary.entries;
    scratch.dictionary = dictionary.page;
    // at least one bit: a width of 0 is legal, but not every reader takes it
    let width = bit_width(entries as u64 - 1).max(1);
    scratch.data.push(width);
    hybrid(&mut scratch.data, codes, width);
    entries
}

/// An Arrow dictionary column as it stands: its values as the dictionary page (unused ones
/// too: readers only look up the keys), its present keys as the RLE_DICTIONARY indices. No
/// string is hashed or compared; the caller checked every key is in range.
fn arrow_dictionary(array: &ArrayRef, scratch: &mut Scratch) -> usize {
    let dictionary = array
        .as_any_dictionary_opt()
        .expect("a dictionary-typed column is a dictionary array");
    let values = dictionary.values();
    scratch.dictionary.clear();
    let page = &mut scratch.dictionary;
    for_each_bytes(values, |v| {
        page.extend_from_slice(&(v.len() as u32).to_le_bytes());
        page.extend_from_slice(v);
    });
    let keys = dictionary.keys().as_primitive::<Int32Type>();
    let codes = &mut scratch.codes;
    codes.clear();
    match keys.nulls() {
        None => codes.extend(keys.values().iter().map(|&k| k as u32)),
        Some(nulls) => codes.extend(
            keys.values()
                .iter()
                .zip(nulls.iter())
                .filter_map(|(&k, valid)| valid.then_some(k as u32)),
        ),
    }
    let entries = values.len();
    let width = bit_width(entries.saturating_sub(1) as u64).max(1);
    scratch.data.push(width);
    hybrid(&mut scratch.data, codes, width);
    entries
}

/// PLAIN booleans: one bit each, least significant first, as Arrow's bitmap already is when
/// the column has no nulls and starts on a byte.
fn plain_booleans(array: &ArrayRef, out: &mut Vec<u8>) {
    let bools = array.as_boolean();
    let bits = bools.values();
    if array.nulls().is_none() && bits.offset().is_multiple_of(8) {
        let start = bits.offset() / 8;
        out.extend_from_slice(&bits.inner().as_slice()[start..start + bits.len().div_ceil(8)]);
        return;
    }
    let present = (0..bools.len()).filter(|&k| bools.is_valid(k));
    bit_pack(out, present.map(|k| u64::from(bools.value(k))), 1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{BooleanArray, Int32Array, StringArray};
    use std::sync::Arc;

    fn spec(data_type: DataType, nullable: bool, encoding: ValueEncoding) -> ColumnSpec {
        ColumnSpec {
            name: "c".into(),
            data_type,
            nullable,
            encoding,
            statistics: true,
        }
    }

    #[test]
    fn a_column_without_nulls_has_one_run_of_levels_and_its_values() {
        let array: ArrayRef = Arc::new(Int32Array::from(vec![7, -1]));
        let mut scratch = Scratch::default();
        let e = encode_chunk(
            &spec(DataType::Int32, true, ValueEncoding::Plain),
            &array,
            &mut scratch,
        );
        // levels: 2 bytes (run of 2 ones), then the values
        assert_eq!(&scratch.data[..6], &[2, 0, 0, 0, 4, 1]);
        assert_eq!(&scratch.data[6..], &[7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        let (min, max) = e.statistics.unwrap().min_max.unwrap();
        assert_eq!(
            (min, max),
            ((-1i32).to_le_bytes().to_vec(), 7i32.to_le_bytes().to_vec())
        );
    }

    #[test]
    fn only_present_values_are_stored_and_nulls_counted() {
        let array: ArrayRef = Arc::new(Int32Array::from(vec![Some(5), None, Some(6)]));
        let mut scratch = Scratch::default();
        let e = encode_chunk(
            &spec(DataType::Int32, true, ValueEncoding::Plain),
            &array,
            &mut scratch,
        );
        // levels 1 0 1 bit-packed in one group of 8, then 5 and 6
        assert_eq!(&scratch.data[..6], &[2, 0, 0, 0, 3, 0b101]);
        assert_eq!(&scratch.data[6..], &[5, 0, 0, 0, 6, 0, 0, 0]);
        assert_eq!(e.statistics.unwrap().null_count, 1);
    }

    #[test]
    fn booleans_sliced_mid_byte_are_packed_from_their_first_row() {
        let bools = BooleanArray::from(vec![
            true, false, true, true, false, false, false, false, true,
        ]);
        let array: ArrayRef = Arc::new(bools.slice(2, 7));
        let mut out = Vec::new();
        plain_booleans(&array, &mut out);
        assert_eq!(out, vec![0b0100_0011]);
    }

    #[test]
    fn strings_become_a_dictionary_and_indices() {
        let array: ArrayRef = Arc::new(StringArray::from(vec!["Q", "D", "Q"]));
        let mut scratch = Scratch::default();
        let s = spec(DataType::Utf8, false, ValueEncoding::Dictionary);
        let e = encode_chunk(&s, &array, &mut scratch);
        assert_eq!(e.dictionary_entries, Some(2));
        assert_eq!(e.encoding, RLE_DICTIONARY);
        assert_eq!(scratch.dictionary, vec![1, 0, 0, 0, b'Q', 1, 0, 0, 0, b'D']);
        // bit width 1, one bit-packed group: 0 1 0
        assert_eq!(scratch.data, vec![1, 3, 0b010]);
    }
}
