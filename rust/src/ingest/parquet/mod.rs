//! A Parquet file written by hand, for the events table: one row group per record batch, one
//! data page per column chunk (after a dictionary page for dictionary columns), definition
//! levels for nullable columns, LZ4_RAW pages where they shrink, the footer in thrift's compact
//! protocol. It encodes what the events table and the streaming pass's tables hold (int16/32/64,
//! bool, utf8, binary, and utf8 already dictionary-encoded: its dictionary and keys are written
//! as they are) and leaves the Arrow schema to the caller, who hands it over serialised as pyarrow stores
//! it (the `ARROW:schema` key), so readers get the declared types, nullability and docs back.

mod columns;
mod decode;
mod dictionary;
mod encode;
mod footer;
mod read;
mod thrift;

pub use read::{ParquetReader, ReadError};

use std::fs::File;
use std::io::{BufWriter, Write};

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Schema};

use crate::arrow_io::keys_within;

use columns::{encode_chunk, Scratch, PLAIN, RLE};
use footer::{footer, ChunkMeta, RowGroupMeta};
use thrift::Compact;

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
    /// Write the null count, and min/max for integers: where queries filter (a reader skips
    /// the row groups of a mostly null column that hold no value when it asks for one).
    pub statistics: bool,
}

// Parquet's enums (parquet.thrift).
const BOOLEAN: i32 = 0;
const INT32: i32 = 1;
const INT64: i32 = 2;
const BYTE_ARRAY: i32 = 6;
const UNCOMPRESSED: i32 = 0;
const LZ4_RAW: i32 = 7;
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;

/// A chunk stays compressed only when that saves at least a tenth: packed deltas do not
/// compress, and decompressing them would cost readers for nothing.
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

/// A column's Parquet physical type.
fn physical(data_type: &DataType) -> Result<i32, WriteError> {
    Ok(match data_type {
        DataType::Boolean => BOOLEAN,
        DataType::Int16 | DataType::Int32 => INT32,
        DataType::Int64 => INT64,
        DataType::Utf8 | DataType::Binary => BYTE_ARRAY,
        DataType::Dictionary(key, value)
            if **key == DataType::Int32 && **value == DataType::Utf8 =>
        {
            BYTE_ARRAY
        }
        other => {
            return Err(WriteError::Schema(format!(
                "the Parquet writer takes no {other} column"
            )))
        }
    })
}

/// Page bodies compressed, in buffers kept from chunk to chunk.
#[derive(Default)]
struct Squeezed {
    dictionary: Vec<u8>,
    data: Vec<u8>,
}

/// `body` as an LZ4 block into `out` (grown, never shrunk); its length.
fn lz4(body: &[u8], out: &mut Vec<u8>) -> usize {
    let need = lz4_flex::block::get_maximum_output_size(body.len());
    if out.len() < need {
        out.resize(need, 0);
    }
    lz4_flex::block::compress_into(body, out).expect("the output has the room lz4 asks for")
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
    /// LZ4 where it saves a tenth; off for a file read soon and once (no CPU to squeeze it).
    compress: bool,
    scratch: Scratch,
    squeezed: Squeezed,
}

impl ParquetFile {
    /// Create the file at `path` for the columns of `schema` encoded as `encoding_of` says
    /// (a dictionary-typed column always keeps its dictionary), with `key_values` (the
    /// serialised Arrow schema among them) in its footer.
    pub fn create(
        path: &str,
        schema: &Schema,
        encoding_of: impl Fn(&str) -> ValueEncoding,
        statistics_of: impl Fn(&str) -> bool,
        key_values: Vec<(String, Vec<u8>)>,
        compress: bool,
    ) -> Result<ParquetFile, WriteError> {
        let mut columns = Vec::new();
        for field in schema.fields() {
            let kind = physical(field.data_type())?;
            let encoding = match field.data_type() {
                DataType::Dictionary(..) => ValueEncoding::Dictionary,
                _ => encoding_of(field.name()),
            };
            let usable = match encoding {
                ValueEncoding::Plain => true,
                ValueEncoding::Delta => kind == INT32 || kind == INT64,
                ValueEncoding::Dictionary => kind == BYTE_ARRAY,
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
                statistics: statistics_of(field.name())
                    && matches!(kind, INT32 | INT64 | BYTE_ARRAY),
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
            compress,
            scratch: Scratch::default(),
            squeezed: Squeezed::default(),
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
        for ((spec, array), name) in self
            .columns
            .iter()
            .zip(batch.columns())
            .zip(batch.column_names())
        {
            if name != spec.name {
                return Err(WriteError::Schema(format!(
                    "column {name} where the file has {}",
                    spec.name
                )));
            }
            check_column(spec, array)?;
        }
        if batch.is_empty() {
            return Ok(());
        }
        let file_offset = self.at as i64;
        let mut metas = Vec::with_capacity(self.columns.len());
        for k in 0..self.columns.len() {
            metas.push(self.write_chunk(k, batch.column(k))?);
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

    /// Write one page (its header, then its bytes as stored) and add its sizes, headers
    /// included, to `sizes` (uncompressed, compressed): the chunk's metadata counts both.
    /// Gives the page's offset in the file.
    fn put_page(
        &mut self,
        header: &Compact,
        raw_len: usize,
        stored: &[u8],
        sizes: &mut (i64, i64),
    ) -> Result<i64, WriteError> {
        let offset = self.at as i64;
        sizes.0 += (header.out.len() + raw_len) as i64;
        sizes.1 += (header.out.len() + stored.len()) as i64;
        self.put(&header.out)?;
        self.put(stored)?;
        Ok(offset)
    }

    /// Write column `k`'s chunk: its pages, compressed where that pays (when the file
    /// compresses at all).
    fn write_chunk(&mut self, k: usize, array: &ArrayRef) -> Result<ChunkMeta, WriteError> {
        let encoded = encode_chunk(&self.columns[k], array, &mut self.scratch);
        let scratch = std::mem::take(&mut self.scratch);
        let mut squeezed = std::mem::take(&mut self.squeezed);
        let dictionary = encoded
            .dictionary_entries
            .map(|n| (n, &scratch.dictionary[..]));
        let data = &scratch.data[..];
        let dictionary_bytes = dictionary.map_or(0, |(_, page)| page.len());
        let (mut squeezed_data, mut squeezed_dictionary) = (0, 0);
        let compress = self.compress && {
            squeezed_data = lz4(data, &mut squeezed.data);
            squeezed_dictionary =
                dictionary.map_or(0, |(_, page)| lz4(page, &mut squeezed.dictionary));
            ((squeezed_data + squeezed_dictionary) as f64)
                < (data.len() + dictionary_bytes) as f64 * WORTH_COMPRESSING
        };

        let mut sizes = (0i64, 0i64); // (uncompressed, compressed), headers included
        let mut dictionary_page_offset = None;
        if let Some((entries, page)) = dictionary {
            let stored = if compress {
                &squeezed.dictionary[..squeezed_dictionary]
            } else {
                page
            };
            let mut header = page_header(DICTIONARY_PAGE, page.len(), stored);
            header.begin(7);
            header.i32(1, entries as i32);
            header.i32(2, PLAIN);
            header.end();
            header.end();
            dictionary_page_offset =
                Some(self.put_page(&header, page.len(), stored, &mut sizes)?);
        }
        let stored = if compress {
            &squeezed.data[..squeezed_data]
        } else {
            data
        };
        let mut header = page_header(DATA_PAGE, data.len(), stored);
        header.begin(5);
        header.i32(1, array.len() as i32);
        header.i32(2, encoded.encoding);
        header.i32(3, RLE);
        header.i32(4, RLE);
        header.end();
        header.end();
        let data_page_offset = self.put_page(&header, data.len(), stored, &mut sizes)?;

        let mut encodings = vec![RLE, encoded.encoding];
        if dictionary.is_some() {
            encodings.insert(0, PLAIN);
        }
        self.scratch = scratch;
        self.squeezed = squeezed;
        Ok(ChunkMeta {
            encodings,
            codec: if compress { LZ4_RAW } else { UNCOMPRESSED },
            num_values: array.len() as i64,
            uncompressed: sizes.0,
            compressed: sizes.1,
            data_page_offset,
            dictionary_page_offset,
            statistics: encoded.statistics,
        })
    }

    /// Write the footer and flush the file; the caller renames it into place.
    pub fn close(&mut self) -> Result<(), WriteError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let footer = footer(&self.columns, self.rows, &self.row_groups, &self.key_values);
        self.put(&footer)?;
        self.put(&(footer.len() as u32).to_le_bytes())?;
        self.put(b"PAR1")?;
        self.file.flush()?;
        Ok(())
    }
}

/// A dictionary of strings given for a dictionary-encoded string column: the file stores the
/// strings, its codes only spare the writer hashing them again (columns.rs).
fn codes_for_strings(spec: &ColumnSpec, given: &DataType) -> bool {
    spec.data_type == DataType::Utf8
        && spec.encoding == ValueEncoding::Dictionary
        && matches!(given, DataType::Dictionary(key, value)
            if **key == DataType::Int32 && **value == DataType::Utf8)
}

/// A batch's column must have the declared type (or codes into its strings), and no nulls
/// where none are allowed.
fn check_column(spec: &ColumnSpec, array: &ArrayRef) -> Result<(), WriteError> {
    if array.data_type() != &spec.data_type && !codes_for_strings(spec, array.data_type()) {
        return Err(WriteError::Schema(format!(
            "column {}: {} where the file has {}",
            spec.name,
            array.data_type(),
            spec.data_type
        )));
    }
    if let Some(dictionary) = array.as_any_dictionary_opt() {
        // keys index the values without a check when written; a null value would have no
        // bytes to write
        let entries = dictionary.values().len();
        let keys = dictionary.keys().as_primitive::<Int32Type>();
        if !keys_within(keys, entries) || dictionary.values().null_count() > 0 {
            return Err(WriteError::Schema(format!(
                "column {}: a key outside its dictionary, or a null in the dictionary",
                spec.name
            )));
        }
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

/// A PageHeader's opening fields, common to every page kind: its type, its sizes before and
/// after compression and the CRC-32 of its stored bytes (a page damaged on disk that still
/// decodes would otherwise be read as other values); the caller adds the kind's own struct
/// and closes the header.
fn page_header(kind: i32, raw_len: usize, stored: &[u8]) -> Compact {
    let mut header = Compact::new();
    header.i32(1, kind);
    header.i32(2, raw_len as i32);
    header.i32(3, stored.len() as i32);
    header.i32(4, page_crc(stored));
    header
}

/// Parquet's page checksum: the zlib CRC-32 of the page's bytes as stored (after compression),
/// its bits kept in an i32.
pub(crate) fn page_crc(stored: &[u8]) -> i32 {
    crc32fast::hash(stored) as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use arrow_schema::Field;
    use std::sync::Arc;

    fn file_of(path: &std::path::Path) -> ParquetFile {
        let schema = Schema::new(vec![Field::new("t", DataType::Int64, false)]);
        let path = path.to_str().unwrap();
        ParquetFile::create(
            path,
            &schema,
            |_| ValueEncoding::Delta,
            |_| true,
            vec![],
            true,
        )
        .unwrap()
    }

    #[test]
    fn a_file_is_magic_pages_footer_length_magic() {
        let path =
            std::env::temp_dir().join(format!("blkscope-parquet-{}.parquet", std::process::id()));
        let mut file = file_of(&path);
        let rows = StructArray::from(vec![(
            Arc::new(Field::new("t", DataType::Int64, false)),
            Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef,
        )]);
        file.write(&rows).unwrap();
        file.close().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            (&bytes[..4], &bytes[bytes.len() - 4..]),
            (&b"PAR1"[..], &b"PAR1"[..])
        );
        let footer =
            u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
        let pages_end = bytes.len() - 8 - footer as usize;
        assert_eq!(pages_end as u64, file.at - 8 - u64::from(footer));
        assert_eq!(file.rows(), 3);
    }

    #[test]
    fn the_page_checksum_is_zlibs_crc32() {
        // the CRC-32 check value of the zlib / gzip polynomial
        assert_eq!(page_crc(b"123456789") as u32, 0xCBF4_3926);
        assert_eq!(page_crc(b""), 0);
    }

    #[test]
    fn codes_stand_for_strings_only_in_a_dictionary_encoded_column() {
        let codes: ArrayRef = Arc::new(
            arrow_array::DictionaryArray::<Int32Type>::try_new(
                arrow_array::Int32Array::from(vec![0, 1]),
                Arc::new(arrow_array::StringArray::from(vec!["R", "W"])),
            )
            .unwrap(),
        );
        let column = |encoding| ColumnSpec {
            name: "op".into(),
            data_type: DataType::Utf8,
            nullable: false,
            encoding,
            statistics: false,
        };
        assert!(check_column(&column(ValueEncoding::Dictionary), &codes).is_ok());
        assert!(check_column(&column(ValueEncoding::Plain), &codes).is_err());
        // SAFETY: the key is out of range on purpose; only check_column looks at it
        let outside: ArrayRef = Arc::new(unsafe {
            arrow_array::DictionaryArray::<Int32Type>::new_unchecked(
                arrow_array::Int32Array::from(vec![2]),
                Arc::new(arrow_array::StringArray::from(vec!["R", "W"])),
            )
        });
        assert!(check_column(&column(ValueEncoding::Dictionary), &outside).is_err());
    }

    #[test]
    fn a_column_of_another_type_is_refused() {
        let path =
            std::env::temp_dir().join(format!("blkscope-parquet-t-{}.parquet", std::process::id()));
        let mut file = file_of(&path);
        let rows = StructArray::from(vec![(
            Arc::new(Field::new("t", DataType::Int32, false)),
            Arc::new(arrow_array::Int32Array::from(vec![1])) as ArrayRef,
        )]);
        let refused = file.write(&rows);
        std::fs::remove_file(&path).unwrap();
        assert!(
            matches!(refused, Err(WriteError::Schema(m)) if m == "column t: Int32 where the file has Int64")
        );
    }
}
