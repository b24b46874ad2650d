//! A Parquet file written by hand, for the events table: one row group per record batch, one
//! data page per column chunk (after a dictionary page for dictionary columns), definition
//! levels for nullable columns, LZ4_RAW pages where they shrink, the footer in thrift's compact
//! protocol. It encodes only what the events table holds (int16/32/64, bool, utf8, binary)
//! and leaves the Arrow schema to the caller, who hands it over serialised as pyarrow stores
//! it (the `ARROW:schema` key), so readers get the declared types, nullability and docs back.

mod encode;
mod thrift;

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufWriter, Write};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Schema};

use encode::{bit_pack, bit_width, delta_binary_packed, hybrid, hybrid_run};
use thrift::{Compact, Kind};

/// How a column's values are encoded (the caller chooses per column; definition levels are
/// always the RLE hybrid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueEncoding {
    Plain,
    /// DELTA_BINARY_PACKED: integers that grow steadily or rarely change.
    Delta,
    /// A dictionary page and RLE_DICTIONARY indices: strings from a small vocabulary.
    Dictionary,
}

/// One column of the file.
#[derive(Clone, Debug)]
pub struct ColumnSpec {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    pub encoding: ValueEncoding,
    /// Write min/max and the null count (integers only): where queries filter.
    pub statistics: bool,
}

// Parquet's enums (parquet.thrift).
const BOOLEAN: i32 = 0;
const INT32: i32 = 1;
const INT64: i32 = 2;
const BYTE_ARRAY: i32 = 6;
const PLAIN: i32 = 0;
const RLE: i32 = 3;
const DELTA_BINARY_PACKED: i32 = 5;
const RLE_DICTIONARY: i32 = 8;
const UNCOMPRESSED: i32 = 0;
const LZ4_RAW: i32 = 7;
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;
const REQUIRED: i32 = 0;
const OPTIONAL: i32 = 1;
const UTF8: i32 = 0;
const INT_16: i32 = 16;

/// The file's bytes must shrink by at least this fraction for a chunk to be kept compressed:
/// packed deltas do not compress, and decompressing them would cost for nothing.
const WORTH_COMPRESSING: f64 = 0.9;

/// What the writer refuses: a batch that is not of the file's schema, or a file system error.
#[derive(Debug)]
pub enum WriteError {
    Io(std::io::Error),
    Schema(String),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Io(e) => write!(f, "{e}"),
            WriteError::Schema(m) => write!(f, "{m}"),
        }
    }
}

/// A column's physical type and its annotation in the schema.
fn physical(data_type: &DataType) -> Result<i32, WriteError> {
    Ok(match data_type {
        DataType::Boolean => BOOLEAN,
        DataType::Int16 | DataType::Int32 => INT32,
        DataType::Int64 => INT64,
        DataType::Utf8 | DataType::Binary => BYTE_ARRAY,
        other => {
            return Err(WriteError::Schema(format!(
                "the Parquet writer takes no {other} column"
            )))
        }
    })
}

/// A chunk's statistics: min and max as Parquet's plain bytes (none when every row is null).
struct Statistics {
    min_max: Option<(Vec<u8>, Vec<u8>)>,
    null_count: i64,
}

/// Where one column chunk went and how it was written: its ColumnMetaData.
struct ChunkMeta {
    encodings: Vec<i32>,
    codec: i32,
    num_values: i64,
    uncompressed: i64,
    compressed: i64,
    data_page_offset: i64,
    dictionary_page_offset: Option<i64>,
    statistics: Option<Statistics>,
}

struct RowGroupMeta {
    columns: Vec<ChunkMeta>,
    rows: i64,
    file_offset: i64,
}

/// The pages of one column chunk before they are written.
struct Pages {
    dictionary: Option<(Vec<u8>, usize)>,
    data: Vec<u8>,
    encoding: i32,
}

/// An open Parquet file; `close` writes the footer.
pub struct ParquetFile {
    file: BufWriter<File>,
    at: u64,
    columns: Vec<ColumnSpec>,
    key_values: Vec<(String, Vec<u8>)>,
    row_groups: Vec<RowGroupMeta>,
    rows: i64,
    closed: bool,
}

impl ParquetFile {
    /// Create the file at `path` for the columns of `schema` encoded as `encoding_of` says,
    /// with `key_values` (the serialised Arrow schema among them) in its footer.
    pub fn create(
        path: &str,
        schema: &Schema,
        encoding_of: impl Fn(&str) -> ValueEncoding,
        statistics_of: impl Fn(&str) -> bool,
        key_values: Vec<(String, Vec<u8>)>,
    ) -> Result<ParquetFile, WriteError> {
        let mut columns = Vec::new();
        for field in schema.fields() {
            physical(field.data_type())?;
            let encoding = encoding_of(field.name());
            let usable = match encoding {
                ValueEncoding::Plain => true,
                ValueEncoding::Delta => physical(field.data_type())? != BOOLEAN
                    && physical(field.data_type())? != BYTE_ARRAY,
                ValueEncoding::Dictionary => physical(field.data_type())? == BYTE_ARRAY,
            };
            if !usable {
                return Err(WriteError::Schema(format!(
                    "column {}: {encoding:?} does not encode {}",
                    field.name(),
                    field.data_type()
                )));
            }
            columns.push(ColumnSpec {
                name: field.name().clone(),
                data_type: field.data_type().clone(),
                nullable: field.is_nullable(),
                encoding,
                statistics: statistics_of(field.name()),
            });
        }
        let mut file = BufWriter::with_capacity(1 << 20, File::create(path)?);
        file.write_all(b"PAR1")?;
        Ok(ParquetFile {
            file,
            at: 4,
            columns,
            key_values,
            row_groups: Vec::new(),
            rows: 0,
            closed: false,
        })
    }

    /// Rows written so far.
    pub fn rows(&self) -> i64 {
        self.rows
    }

    /// Append one record batch of the file's columns, in order, as a row group.
    pub fn write(&mut self, batch: &StructArray) -> Result<(), WriteError> {
        if self.closed {
            return Err(WriteError::Schema("the Parquet file is closed".into()));
        }
        if batch.num_columns() != self.columns.len() {
            return Err(WriteError::Schema(format!(
                "a batch of {} columns for a file of {}",
                batch.num_columns(),
                self.columns.len()
            )));
        }
        if batch.is_empty() {
            return Ok(());
        }
        let file_offset = self.at as i64;
        let mut metas = Vec::with_capacity(self.columns.len());
        for (k, spec) in self.columns.clone().iter().enumerate() {
            let array = batch.column(k);
            check_column(spec, array)?;
            metas.push(self.write_chunk(spec, array)?);
        }
        self.row_groups.push(RowGroupMeta {
            columns: metas,
            rows: batch.len() as i64,
            file_offset,
        });
        self.rows += batch.len() as i64;
        Ok(())
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        self.file.write_all(bytes)?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    /// Write one column chunk: its pages, compressed where that pays.
    fn write_chunk(&mut self, spec: &ColumnSpec, array: &ArrayRef) -> Result<ChunkMeta, WriteError> {
        let rows = array.len();
        let pages = encode_pages(spec, array);
        let bodies: Vec<&[u8]> = pages
            .dictionary
            .iter()
            .map(|(d, _)| d.as_slice())
            .chain([pages.data.as_slice()])
            .collect();
        let squeezed: Vec<Vec<u8>> = bodies
            .iter()
            .map(|b| lz4_flex::block::compress(b))
            .collect();
        let plain_bytes: usize = bodies.iter().map(|b| b.len()).sum();
        let squeezed_bytes: usize = squeezed.iter().map(Vec::len).sum();
        let compress = (squeezed_bytes as f64) < plain_bytes as f64 * WORTH_COMPRESSING;
        let codec = if compress { LZ4_RAW } else { UNCOMPRESSED };
        let stored = |k: usize| if compress { &squeezed[k][..] } else { bodies[k] };

        let (mut uncompressed, mut compressed) = (0i64, 0i64);
        let mut dictionary_page_offset = None;
        let mut page = 0;
        if let Some((_, entries)) = &pages.dictionary {
            let mut header = Compact::new();
            header.i32(1, DICTIONARY_PAGE);
            header.i32(2, bodies[0].len() as i32);
            header.i32(3, stored(0).len() as i32);
            header.begin(7);
            header.i32(1, *entries as i32);
            header.i32(2, PLAIN);
            header.end();
            header.end();
            dictionary_page_offset = Some(self.at as i64);
            uncompressed += (header.out.len() + bodies[0].len()) as i64;
            compressed += (header.out.len() + stored(0).len()) as i64;
            self.put(&header.out)?;
            self.put(stored(0))?;
            page = 1;
        }
        let mut header = Compact::new();
        header.i32(1, DATA_PAGE);
        header.i32(2, bodies[page].len() as i32);
        header.i32(3, stored(page).len() as i32);
        header.begin(5);
        header.i32(1, rows as i32);
        header.i32(2, pages.encoding);
        header.i32(3, RLE);
        header.i32(4, RLE);
        header.end();
        header.end();
        let data_page_offset = self.at as i64;
        uncompressed += (header.out.len() + bodies[page].len()) as i64;
        compressed += (header.out.len() + stored(page).len()) as i64;
        self.put(&header.out)?;
        self.put(stored(page))?;

        let mut encodings = vec![RLE, pages.encoding];
        if pages.dictionary.is_some() {
            encodings.insert(0, PLAIN);
        }
        let statistics = spec.statistics.then(|| statistics(array)).flatten();
        Ok(ChunkMeta {
            encodings,
            codec,
            num_values: rows as i64,
            uncompressed,
            compressed,
            data_page_offset,
            dictionary_page_offset,
            statistics,
        })
    }

    /// Write the footer and flush the file; the caller renames it into place.
    pub fn close(&mut self) -> Result<(), WriteError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let footer = self.footer();
        self.put(&footer)?;
        self.put(&(footer.len() as u32).to_le_bytes())?;
        self.put(b"PAR1")?;
        self.file.flush()?;
        Ok(())
    }

    /// FileMetaData: the schema, the row groups, the key-value metadata.
    fn footer(&self) -> Vec<u8> {
        let mut t = Compact::new();
        t.i32(1, 2);
        t.list(2, Kind::Struct, self.columns.len() + 1);
        t.begin_elem();
        t.binary(4, b"schema");
        t.i32(5, self.columns.len() as i32);
        t.end();
        for spec in &self.columns {
            schema_element(&mut t, spec);
        }
        t.i64(3, self.rows);
        t.list(4, Kind::Struct, self.row_groups.len());
        for (ordinal, group) in self.row_groups.iter().enumerate() {
            self.row_group(&mut t, group, ordinal);
        }
        t.list(5, Kind::Struct, self.key_values.len());
        for (key, value) in &self.key_values {
            t.begin_elem();
            t.binary(1, key.as_bytes());
            t.binary(2, value);
            t.end();
        }
        t.binary(6, b"blkscope-core version 0.1.0");
        t.list(7, Kind::Struct, self.columns.len());
        for _ in &self.columns {
            // TypeDefinedOrder: min/max are the type's own order (signed for integers)
            t.begin_elem();
            t.begin(1);
            t.end();
            t.end();
        }
        t.end();
        t.out
    }

    fn row_group(&self, t: &mut Compact, group: &RowGroupMeta, ordinal: usize) {
        t.begin_elem();
        t.list(1, Kind::Struct, group.columns.len());
        for (spec, chunk) in self.columns.iter().zip(&group.columns) {
            column_chunk(t, spec, chunk);
        }
        t.i64(2, group.columns.iter().map(|c| c.uncompressed).sum());
        t.i64(3, group.rows);
        t.i64(5, group.file_offset);
        t.i64(6, group.columns.iter().map(|c| c.compressed).sum());
        if let Ok(ordinal) = i16::try_from(ordinal) {
            t.field_i16(7, ordinal);
        }
        t.end();
    }
}

/// A batch's column must have the declared type, and no nulls where none are allowed.
fn check_column(spec: &ColumnSpec, array: &ArrayRef) -> Result<(), WriteError> {
    if array.data_type() != &spec.data_type {
        return Err(WriteError::Schema(format!(
            "column {}: {} where the file has {}",
            spec.name,
            array.data_type(),
            spec.data_type
        )));
    }
    if !spec.nullable && array.null_count() > 0 {
        return Err(WriteError::Schema(format!(
            "column {}: {} nulls in a column that has none",
            spec.name,
            array.null_count()
        )));
    }
    Ok(())
}

fn schema_element(t: &mut Compact, spec: &ColumnSpec) {
    t.begin_elem();
    t.i32(1, physical(&spec.data_type).expect("checked when the file was made"));
    t.i32(3, if spec.nullable { OPTIONAL } else { REQUIRED });
    t.binary(4, spec.name.as_bytes());
    match spec.data_type {
        DataType::Utf8 => {
            t.i32(6, UTF8);
            t.begin(10);
            t.begin(1); // StringType
            t.end();
            t.end();
        }
        DataType::Int16 => {
            t.i32(6, INT_16);
            t.begin(10);
            t.begin(10); // IntType
            t.i8(1, 16);
            t.bool(2, true);
            t.end();
            t.end();
        }
        _ => {}
    }
    t.end();
}

fn column_chunk(t: &mut Compact, spec: &ColumnSpec, chunk: &ChunkMeta) {
    t.begin_elem();
    t.i64(2, chunk.dictionary_page_offset.unwrap_or(chunk.data_page_offset));
    t.begin(3);
    t.i32(1, physical(&spec.data_type).expect("checked when the file was made"));
    t.list(2, Kind::I32, chunk.encodings.len());
    for &e in &chunk.encodings {
        t.elem_i32(e);
    }
    t.list(3, Kind::Binary, 1);
    t.elem_binary(spec.name.as_bytes());
    t.i32(4, chunk.codec);
    t.i64(5, chunk.num_values);
    t.i64(6, chunk.uncompressed);
    t.i64(7, chunk.compressed);
    t.i64(9, chunk.data_page_offset);
    if let Some(offset) = chunk.dictionary_page_offset {
        t.i64(11, offset);
    }
    if let Some(s) = &chunk.statistics {
        t.begin(12);
        t.i64(3, s.null_count);
        if let Some((min, max)) = &s.min_max {
            t.binary(5, max);
            t.binary(6, min);
        }
        t.end();
    }
    t.end();
    t.end();
}

/// Definition levels of a nullable column (the v1 data page's: a 4-byte length, then the
/// hybrid at width 1); a column with no nulls, or only nulls, is one run.
fn definition_levels(out: &mut Vec<u8>, array: &ArrayRef) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    let rows = array.len();
    match array.nulls() {
        None => hybrid_run(out, 1, rows, 1),
        Some(nulls) if nulls.null_count() == rows => hybrid_run(out, 0, rows, 1),
        Some(nulls) => {
            let levels: Vec<u32> = nulls.iter().map(u32::from).collect();
            hybrid(out, &levels, 1);
        }
    }
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

/// The values of rows that have one.
fn present<T: Copy>(values: &[T], array: &ArrayRef) -> Vec<T> {
    match array.nulls() {
        None => values.to_vec(),
        Some(nulls) => values
            .iter()
            .zip(nulls.iter())
            .filter_map(|(&v, valid)| valid.then_some(v))
            .collect(),
    }
}

/// Integers of a column as the type Parquet stores (INT32 holds int16 too).
enum Ints {
    I32(Vec<i32>),
    I64(Vec<i64>),
}

fn ints(array: &ArrayRef) -> Ints {
    match array.data_type() {
        DataType::Int16 => {
            let widened: Vec<i32> = array
                .as_primitive::<Int16Type>()
                .values()
                .iter()
                .map(|&v| i32::from(v))
                .collect();
            Ints::I32(present(&widened, array))
        }
        DataType::Int32 => Ints::I32(present(array.as_primitive::<Int32Type>().values(), array)),
        _ => Ints::I64(present(array.as_primitive::<Int64Type>().values(), array)),
    }
}

/// The byte strings of rows that have one (utf8 or binary).
fn byte_strings(array: &ArrayRef) -> Vec<&[u8]> {
    let valid = |k: usize| array.is_valid(k);
    match array.data_type() {
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            (0..a.len())
                .filter(|&k| valid(k))
                .map(|k| a.value(k).as_bytes())
                .collect()
        }
        _ => {
            let a = array.as_binary::<i32>();
            (0..a.len()).filter(|&k| valid(k)).map(|k| a.value(k)).collect()
        }
    }
}

/// A fast hash for short keys (FxHash's step): std's SipHash would be most of the cost of
/// looking up a one-letter action.
#[derive(Default)]
struct ShortKeyHasher(u64);

impl Hasher for ShortKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for piece in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..piece.len()].copy_from_slice(piece);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl ShortKeyHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The dictionary page (PLAIN byte arrays, in first-seen order) and each value's index.
fn dictionary<'a>(values: &[&'a [u8]]) -> (Vec<&'a [u8]>, Vec<u32>) {
    let mut index: HashMap<&[u8], u32, BuildHasherDefault<ShortKeyHasher>> = HashMap::default();
    let mut entries = Vec::new();
    let mut codes = Vec::with_capacity(values.len());
    let mut last: Option<(&[u8], u32)> = None;
    for &v in values {
        let code = match last {
            Some((l, code)) if l == v => code,
            _ => *index.entry(v).or_insert_with(|| {
                entries.push(v);
                entries.len() as u32 - 1
            }),
        };
        last = Some((v, code));
        codes.push(code);
    }
    (entries, codes)
}

fn plain_byte_arrays(out: &mut Vec<u8>, values: &[&[u8]]) {
    for v in values {
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
}

/// A column chunk's pages, uncompressed.
fn encode_pages(spec: &ColumnSpec, array: &ArrayRef) -> Pages {
    let mut data = Vec::new();
    if spec.nullable {
        definition_levels(&mut data, array);
    }
    if array.null_count() == array.len() {
        return Pages {
            dictionary: None,
            data,
            encoding: PLAIN,
        };
    }
    let (dictionary, encoding) = match (spec.encoding, array.data_type()) {
        (ValueEncoding::Dictionary, _) => {
            let values = byte_strings(array);
            let (entries, codes) = dictionary(&values);
            let mut page = Vec::new();
            plain_byte_arrays(&mut page, &entries);
            // at least one bit: a width of 0 is legal but not every reader takes it
            let width = bit_width(entries.len() as u64 - 1).max(1);
            data.push(width);
            hybrid(&mut data, &codes, width);
            (Some((page, entries.len())), RLE_DICTIONARY)
        }
        (ValueEncoding::Delta, _) => {
            match ints(array) {
                Ints::I32(v) => delta_binary_packed(&mut data, &v),
                Ints::I64(v) => delta_binary_packed(&mut data, &v),
            }
            (None, DELTA_BINARY_PACKED)
        }
        (ValueEncoding::Plain, DataType::Boolean) => {
            let bools = array.as_boolean();
            let bits: Vec<u64> = (0..bools.len())
                .filter(|&k| bools.is_valid(k))
                .map(|k| u64::from(bools.value(k)))
                .collect();
            bit_pack(&mut data, &bits, 1);
            (None, PLAIN)
        }
        (ValueEncoding::Plain, DataType::Utf8 | DataType::Binary) => {
            plain_byte_arrays(&mut data, &byte_strings(array));
            (None, PLAIN)
        }
        (ValueEncoding::Plain, _) => {
            match ints(array) {
                Ints::I32(v) => v.iter().for_each(|x| data.extend_from_slice(&x.to_le_bytes())),
                Ints::I64(v) => v.iter().for_each(|x| data.extend_from_slice(&x.to_le_bytes())),
            }
            (None, PLAIN)
        }
    };
    Pages {
        dictionary,
        data,
        encoding,
    }
}

/// Min, max (as Parquet's plain bytes) and the null count of an integer column.
fn statistics(array: &ArrayRef) -> Option<Statistics> {
    fn bounds<T: Ord + Copy>(v: &[T], bytes: impl Fn(T) -> Vec<u8>) -> Option<(Vec<u8>, Vec<u8>)> {
        let lo = *v.iter().min()?;
        let hi = *v.iter().max()?;
        Some((bytes(lo), bytes(hi)))
    }
    let min_max = match ints_if_integer(array)? {
        Ints::I32(v) => bounds(&v, |x| x.to_le_bytes().to_vec()),
        Ints::I64(v) => bounds(&v, |x| x.to_le_bytes().to_vec()),
    };
    Some(Statistics {
        min_max,
        null_count: array.null_count() as i64,
    })
}

fn ints_if_integer(array: &ArrayRef) -> Option<Ints> {
    matches!(
        array.data_type(),
        DataType::Int16 | DataType::Int32 | DataType::Int64
    )
    .then(|| ints(array))
}
