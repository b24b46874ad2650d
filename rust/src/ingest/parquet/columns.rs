//! One Arrow column as a Parquet column chunk's page bodies: definition levels, then the values
//! of the rows that have one, as the column's encoding says; min/max on the way.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_buffer::{ArrowNativeType, ToByteSlice};
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
    remap: Vec<u32>,
    i32s: Vec<i32>,
    i64s: Vec<i64>,
    letters: Letters,
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
        DataType::Dictionary(..) if spec.data_type == DataType::Utf8 => {
            encoded.dictionary_entries = Some(strings_of_codes(array, scratch));
            encoded.encoding = RLE_DICTIONARY;
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
        T::put_all_plain(values, data);
    }
    if let Some(s) = &mut e.statistics {
        if let Some((lo, hi)) = extremes(values) {
            let (mut min, mut max) = (Vec::new(), Vec::new());
            lo.put_plain(&mut min);
            hi.put_plain(&mut max);
            s.min_max = Some((min, max));
        }
    }
}

/// The smallest and largest value, in one pass of four lanes each: eight chains of compares
/// the CPU runs side by side, where `min()` then `max()` read the values twice, each one
/// compare waiting on the one before.
fn extremes<T: Copy + Ord>(values: &[T]) -> Option<(T, T)> {
    let first = *values.first()?;
    let (mut lo, mut hi) = ([first; 4], [first; 4]);
    let mut quads = values.chunks_exact(4);
    for quad in &mut quads {
        for k in 0..4 {
            lo[k] = lo[k].min(quad[k]);
            hi[k] = hi[k].max(quad[k]);
        }
    }
    for &v in quads.remainder() {
        lo[0] = lo[0].min(v);
        hi[0] = hi[0].max(v);
    }
    Some((lo.into_iter().min()?, hi.into_iter().max()?))
}

/// An integer as Parquet stores it.
trait IntValue: Copy + Ord + super::encode::DeltaInt + ArrowNativeType {
    fn put_plain(self, out: &mut Vec<u8>);

    /// PLAIN values: the column's own bytes in one copy where memory is little-endian too.
    fn put_all_plain(values: &[Self], out: &mut Vec<u8>) {
        if cfg!(target_endian = "little") {
            out.extend_from_slice(values.to_byte_slice());
        } else {
            for v in values {
                v.put_plain(out);
            }
        }
    }
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
        Some(nulls) if nulls.offset().is_multiple_of(8) => {
            let start = nulls.offset() / 8;
            bitmap_levels(
                out,
                &nulls.validity()[start..start + rows.div_ceil(8)],
                rows,
            );
        }
        Some(nulls) => {
            scratch.levels.clear();
            scratch.levels.extend(nulls.iter().map(u32::from));
            hybrid(out, &scratch.levels, 1);
        }
    }
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// Definition levels straight from a validity bitmap (`rows` bits, least significant first,
/// as the hybrid's bit-packed groups are): runs of two or more all-valid or all-null bytes
/// become RLE runs, the other bytes are copied as bit-packed groups of 8 levels. No level is
/// unpacked one at a time.
fn bitmap_levels(out: &mut Vec<u8>, bitmap: &[u8], rows: usize) {
    let full = rows / 8;
    let mut literal_from = 0;
    let mut at = 0;
    while at < full {
        let byte = bitmap[at];
        let mut end = at + 1;
        if byte == 0 || byte == 0xff {
            while end < full && bitmap[end] == byte {
                end += 1;
            }
        }
        if end - at >= 2 {
            literal_groups(out, &bitmap[literal_from..at], None);
            hybrid_run(out, u32::from(byte & 1), (end - at) * 8, 1);
            literal_from = end;
        }
        at = end;
    }
    // the last byte's bits past the last row are padding: written as zeros
    let tail = (!rows.is_multiple_of(8)).then(|| bitmap[full] & ((1u8 << (rows % 8)) - 1));
    literal_groups(out, &bitmap[literal_from..full], tail);
}

/// Bit-packed groups of 8 levels of width 1: a group per byte (and the padded last one).
fn literal_groups(out: &mut Vec<u8>, bytes: &[u8], tail: Option<u8>) {
    let groups = bytes.len() + usize::from(tail.is_some());
    if groups == 0 {
        return;
    }
    super::encode::varint(out, ((groups as u64) << 1) | 1);
    out.extend_from_slice(bytes);
    out.extend(tail);
}

/// The values of rows that have one: the column's own slice when it has no nulls.
fn present<'a, T: Copy>(values: &'a [T], array: &ArrayRef, into: &'a mut Vec<T>) -> &'a [T] {
    match array.nulls() {
        None => values,
        Some(nulls) => {
            into.clear();
            // the valid rows found a 64-bit word of the bitmap at a time
            into.extend(nulls.valid_indices().map(|k| values[k]));
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
        match narrow.nulls() {
            // (a loop the compiler widens many at a time: no row to check)
            None => into.extend(narrow.values().iter().map(|&v| i32::from(v))),
            Some(nulls) => into.extend(nulls.valid_indices().map(|k| i32::from(narrow.value(k)))),
        }
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
    if let Some(value) = one_value(array) {
        dictionary.index(value);
        codes.resize(array.len(), 0);
    } else if !letter_indices(array, &mut dictionary, codes, &mut scratch.letters) {
        // a row like the one before (a run of one source, one process) skips the lookup
        let mut last: Option<(&[u8], u32)> = None;
        for_each_bytes(array, |v| {
            let code = match last {
                Some((l, code)) if same_bytes(l, v) => code,
                _ => dictionary.index(v),
            };
            last = Some((v, code));
            codes.push(code);
        });
    }
    indices_of(dictionary, scratch)
}

/// The dictionary's page into `scratch.dictionary` and `scratch.codes` as RLE_DICTIONARY
/// indices into `scratch.data`; returns the dictionary's entries.
fn indices_of(dictionary: Dictionary, scratch: &mut Scratch) -> usize {
    let entries = dictionary.entries;
    scratch.dictionary = dictionary.page;
    // at least one bit: a width of 0 is legal, but not every reader takes it
    let width = bit_width(entries as u64 - 1).max(1);
    scratch.data.push(width);
    hybrid(&mut scratch.data, &scratch.codes, width);
    entries
}

/// A dictionary array stored as the string column it stands for: the dictionary page and
/// indices `dictionary_indices` makes of its strings (each distinct string in the order first
/// seen), with a string hashed once per distinct code, not once per row.
fn strings_of_codes(array: &ArrayRef, scratch: &mut Scratch) -> usize {
    let given = array
        .as_any_dictionary_opt()
        .expect("a dictionary-typed column is a dictionary array");
    let values = given.values().as_string::<i32>();
    let keys = given.keys().as_primitive::<Int32Type>();
    let mut dictionary = Dictionary::new(std::mem::take(&mut scratch.dictionary));
    // each code's index in the page, NO_CODE until its first row
    let remap = &mut scratch.remap;
    remap.clear();
    remap.resize(values.len(), NO_CODE);
    let codes = &mut scratch.codes;
    codes.clear();
    match keys.nulls() {
        None => {
            // two tight loops: the codes in the order first seen, then every row's index (a
            // lookup and a store a row, where one loop doing both cost several times that)
            for &k in keys.values() {
                let slot = &mut remap[k as usize];
                if *slot == NO_CODE {
                    *slot = dictionary.index(values.value(k as usize).as_bytes());
                }
            }
            codes.extend(keys.values().iter().map(|&k| remap[k as usize]));
        }
        Some(nulls) => {
            let present = keys.values().iter().zip(nulls.iter()).filter(|(_, v)| *v);
            for (&k, _) in present {
                let slot = &mut remap[k as usize];
                if *slot == NO_CODE {
                    *slot = dictionary.index(values.value(k as usize).as_bytes());
                }
                codes.push(*slot);
            }
        }
    }
    indices_of(dictionary, scratch)
}

/// A string of one or two bytes as an index into `Letters::codes`: its bytes and its length.
#[inline(always)]
fn letters_key(bytes: &[u8], start: usize, len: usize) -> usize {
    let second = if len == 2 {
        usize::from(bytes[start + 1])
    } else {
        0
    };
    usize::from(bytes[start]) | second << 8 | (len - 1) << 16
}

/// Each one- or two-byte string's code in the chunk being encoded (NO_CODE where none yet), and
/// the keys set, to clear them for the next chunk. The table is made on first use: an empty
/// one costs nothing to make (the file takes its scratch, leaving a default, for every chunk).
#[derive(Default)]
pub struct Letters {
    codes: Vec<u32>,
    set: Vec<usize>,
}

const NO_CODE: u32 = u32::MAX;

impl Letters {
    /// The table of every key's code (made, all NO_CODE, when first asked for) and the keys
    /// set in it.
    fn parts(&mut self) -> (&mut [u32], &mut Vec<usize>) {
        if self.codes.is_empty() {
            self.codes = vec![NO_CODE; 2 << 16];
        }
        (&mut self.codes, &mut self.set)
    }
}

/// The codes of a utf8 column with no nulls whose every row is one or two bytes (the action
/// letters, the op): a table lookup per row instead of a hash probe, the dictionary the same
/// (each string added in the order first seen). False, with nothing done, for any other column.
fn letter_indices<'a>(
    array: &'a ArrayRef,
    dictionary: &mut Dictionary<'a>,
    codes: &mut Vec<u32>,
    letters: &mut Letters,
) -> bool {
    let Some(strings) = array.as_string_opt::<i32>() else {
        return false;
    };
    let offsets = strings.value_offsets();
    if array.null_count() > 0 || !offsets.windows(2).all(|w| matches!(w[1] - w[0], 1 | 2)) {
        return false;
    }
    let bytes = strings.value_data();
    let (table, set) = letters.parts();
    for w in offsets.windows(2) {
        let (start, len) = (w[0] as usize, (w[1] - w[0]) as usize);
        let key = letters_key(bytes, start, len);
        let mut code = table[key];
        if code == NO_CODE {
            code = dictionary.index(&bytes[start..start + len]);
            table[key] = code;
            set.push(key);
        }
        codes.push(code);
    }
    for key in set.drain(..) {
        table[key] = NO_CODE;
    }
    true
}

/// The one value of a utf8 column with no nulls whose every row holds the same bytes (the
/// events' source): told by the offsets stepping by one length and the bytes repeating at that
/// period, one compare of the whole buffer instead of one per row.
fn one_value(array: &ArrayRef) -> Option<&[u8]> {
    let strings = array.as_string_opt::<i32>()?;
    let offsets = strings.value_offsets();
    let first = *offsets.first()?;
    let width = offsets.get(1)? - first;
    if array.null_count() > 0 || !offsets.windows(2).all(|w| w[1] - w[0] == width) {
        return None;
    }
    let start = first as usize;
    let bytes = &strings.value_data()[start..*offsets.last()? as usize];
    let width = width as usize;
    (bytes[width..] == bytes[..bytes.len() - width]).then_some(&bytes[..width])
}

/// Two short strings equal, compared in line (a `memcmp` call per row cost more than the
/// compare).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
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

    /// Bitmaps of runs and noise, of every length around a byte's edges.
    fn bitmaps() -> Vec<(Vec<u8>, usize)> {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut out = Vec::new();
        for rows in (0..40).chain([1000, 1001, 4099]) {
            let mut bytes = vec![0u8; rows / 8 + 1];
            for (k, b) in bytes.iter_mut().enumerate() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = match (seed >> 60, k % 7) {
                    (0..=5, _) => 0xff,
                    (6..=9, 0..=3) => 0,
                    _ => seed as u8,
                };
            }
            out.push((bytes, rows));
        }
        out
    }

    #[test]
    fn levels_from_a_bitmap_read_back_as_its_bits() {
        for (bitmap, rows) in bitmaps() {
            let mut out = Vec::new();
            bitmap_levels(&mut out, &bitmap, rows);
            let mut valid = arrow_buffer::BooleanBufferBuilder::new(rows);
            let (present, used) = super::super::decode::levels(&out, rows, &mut valid).unwrap();
            let valid = valid.finish();
            let expected: Vec<bool> = (0..rows)
                .map(|k| bitmap[k / 8] >> (k % 8) & 1 == 1)
                .collect();
            assert_eq!(valid.iter().collect::<Vec<_>>(), expected, "{rows} rows");
            assert_eq!(present, expected.iter().filter(|&&v| v).count());
            assert_eq!(used, out.len());
        }
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
    fn one_value_only_where_every_row_holds_it() {
        let same: ArrayRef = Arc::new(StringArray::from(vec!["blkparse"; 5]));
        assert_eq!(one_value(&same), Some(&b"blkparse"[..]));
        let sliced = same.slice(1, 3);
        assert_eq!(one_value(&sliced), Some(&b"blkparse"[..]));
        let cases: [&[Option<&str>]; 5] = [
            &[Some("ab"), Some("ba")],
            &[Some("ab"), Some("abc")],
            &[Some("ab"), None],
            &[Some("abab"), Some("ab"), Some("ab")],
            &[],
        ];
        for rows in cases {
            let array: ArrayRef = Arc::new(StringArray::from(rows.to_vec()));
            assert_eq!(one_value(&array), None, "{rows:?}");
        }
        let empty: ArrayRef = Arc::new(StringArray::from(vec![""; 3]));
        assert_eq!(one_value(&empty), Some(&b""[..]));
    }

    #[test]
    fn a_column_of_one_value_is_the_dictionary_a_row_at_a_time_makes() {
        let s = spec(DataType::Utf8, false, ValueEncoding::Dictionary);
        let array: ArrayRef = Arc::new(StringArray::from(vec!["blkparse"; 20]));
        let mut scratch = Scratch::default();
        let e = encode_chunk(&s, &array, &mut scratch);
        assert_eq!(e.dictionary_entries, Some(1));
        let mut page = vec![8, 0, 0, 0];
        page.extend_from_slice(b"blkparse");
        assert_eq!(scratch.dictionary, page);
        // bit width 1, one RLE run of 20 zeros
        assert_eq!(scratch.data, vec![1, 40, 0]);
    }

    #[test]
    fn int16_values_are_widened_without_their_nulls() {
        let array: ArrayRef =
            Arc::new(arrow_array::Int16Array::from(vec![Some(-2), None, Some(7)]));
        let mut into = Vec::new();
        assert_eq!(present_i32(&array, &mut into), &[-2, 7]);
        let full: ArrayRef = Arc::new(arrow_array::Int16Array::from(vec![3, i16::MIN]));
        assert_eq!(present_i32(&full, &mut into), &[3, i32::from(i16::MIN)]);
    }

    /// The dictionary and indices the hash probe of every row gives.
    fn probed(values: &[&str]) -> (Vec<u8>, Vec<u8>) {
        let mut dictionary = Dictionary::new(Vec::new());
        let codes: Vec<u32> = values
            .iter()
            .map(|v| dictionary.index(v.as_bytes()))
            .collect();
        let width = bit_width(dictionary.entries as u64 - 1).max(1);
        let mut data = vec![width];
        hybrid(&mut data, &codes, width);
        (dictionary.page, data)
    }

    #[test]
    fn letters_by_table_are_the_dictionary_the_probe_makes() {
        let s = spec(DataType::Utf8, false, ValueEncoding::Dictionary);
        let mut scratch = Scratch::default();
        let columns: [&[&str]; 3] = [
            &["Q", "UT", "D", "Q", "UT", "C", "U\0", "U"],
            &["Q", "FWS", "Q"],
            &["", "Q"],
        ];
        // twice: what one chunk set in the table must not leak into the next
        for values in columns.iter().chain(&columns) {
            let array: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
            encode_chunk(&s, &array, &mut scratch);
            let (page, data) = probed(values);
            assert_eq!(
                (&scratch.dictionary, &scratch.data),
                (&page, &data),
                "{values:?}"
            );
        }
        assert!(scratch.letters.set.is_empty());
        assert!(scratch.letters.codes.iter().all(|&c| c == NO_CODE));
        assert_eq!(scratch.letters.codes.len(), 2 << 16);
    }

    #[test]
    fn a_fresh_scratch_holds_no_memory() {
        // the file swaps in a default scratch for every chunk it writes
        let scratch = Scratch::default();
        assert_eq!(scratch.letters.codes.capacity(), 0);
        assert_eq!(scratch.data.capacity(), 0);
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

    #[test]
    fn codes_without_nulls_are_stored_as_their_strings_are() {
        use arrow_array::DictionaryArray;
        let vocabulary = StringArray::from(vec!["C", "Q", "UT", "Q", "D"]);
        let keys: Vec<i32> = (0..100).map(|k| [2, 1, 1, 3, 4, 1][k % 6]).collect();
        let strings: ArrayRef = Arc::new(
            keys.iter()
                .map(|&k| Some(vocabulary.value(k as usize)))
                .collect::<StringArray>(),
        );
        let codes = DictionaryArray::<Int32Type>::try_new(keys.into(), Arc::new(vocabulary));
        let codes: ArrayRef = Arc::new(codes.unwrap());
        let s = spec(DataType::Utf8, false, ValueEncoding::Dictionary);
        let mut scratch = Scratch::default();
        let from_codes = encode_chunk(&s, &codes, &mut scratch);
        let (page, data) = (scratch.dictionary.clone(), scratch.data.clone());
        encode_chunk(&s, &strings, &mut scratch);
        assert_eq!((&page, &data), (&scratch.dictionary, &scratch.data));
        assert_eq!(from_codes.dictionary_entries, Some(3), "UT, Q, D");
        assert_eq!(&page[..6], &[2, 0, 0, 0, b'U', b'T']);
    }

    #[test]
    fn codes_into_strings_are_stored_as_the_strings_are() {
        use arrow_array::DictionaryArray;
        // names unused, repeated and in another order than first seen; null rows
        let names = StringArray::from(vec!["kworker/u4:2", "fio", "jbd2", "fio", "Q"]);
        let keys = Int32Array::from(vec![
            Some(3),
            None,
            Some(0),
            Some(1),
            Some(3),
            None,
            Some(4),
        ]);
        let codes = DictionaryArray::<Int32Type>::try_new(keys.clone(), Arc::new(names.clone()));
        let codes: ArrayRef = Arc::new(codes.unwrap());
        let strings: ArrayRef = Arc::new(
            keys.iter()
                .map(|k| k.map(|k| names.value(k as usize)))
                .collect::<StringArray>(),
        );
        let s = spec(DataType::Utf8, true, ValueEncoding::Dictionary);
        let mut scratch = Scratch::default();
        let from_codes = encode_chunk(&s, &codes, &mut scratch);
        let (page, data) = (scratch.dictionary.clone(), scratch.data.clone());
        let from_strings = encode_chunk(&s, &strings, &mut scratch);
        assert_eq!((&page, &data), (&scratch.dictionary, &scratch.data));
        assert_eq!(from_codes.dictionary_entries, Some(3));
        assert_eq!(from_strings.dictionary_entries, Some(3));
        assert_eq!(from_codes.encoding, RLE_DICTIONARY);
        assert_eq!(&page[..7], &[3, 0, 0, 0, b'f', b'i', b'o']);
    }

    #[test]
    fn extremes_are_the_smallest_and_largest_at_any_length_and_place() {
        assert_eq!(extremes::<i64>(&[]), None);
        assert_eq!(extremes(&[7i32]), Some((7, 7)));
        for len in 2..12 {
            for at in 0..len {
                let mut values = vec![5i64; len];
                values[at] = -3;
                values[(at + 1) % len] = 9;
                let (lo, hi) = extremes(&values).unwrap();
                let expected = (-3, 9);
                assert_eq!((lo, hi), expected, "len {len} at {at}");
            }
        }
    }
}
