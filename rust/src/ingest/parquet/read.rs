//! The writer's own files read back, a row group at a time, into the Arrow arrays the
//! streaming pass reads: integers and booleans as they are, strings as the column chunk's
//! dictionary and keys (never a string per row). It reads what the writer writes (flat
//! columns; PLAIN, DELTA_BINARY_PACKED and dictionary pages; v1 data pages; LZ4_RAW or none)
//! and calls any other file unsupported, for the caller to read another way.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use arrow_array::types::{Int16Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, DictionaryArray, PrimitiveArray, StringArray};
use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Schema};

use super::columns::{DELTA_BINARY_PACKED, PLAIN, RLE_DICTIONARY};
use super::decode::{
    delta_binary_packed, hybrid, levels, plain, plain_booleans, plain_byte_arrays, Truncated,
    Unpacked,
};
use super::thrift::{Malformed, Reader};
use super::{
    page_crc, BOOLEAN, BYTE_ARRAY, DATA_PAGE, DICTIONARY_PAGE, INT32, INT64, LZ4_RAW, UNCOMPRESSED,
};

/// Who wrote the files this reader takes (footer.rs writes it).
pub const CREATED_BY: &str = "blkscope-core";

/// The deprecated name of a dictionary page's encoding, which older writers still put there.
const PLAIN_DICTIONARY: i32 = 2;

/// Why a file was not read.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    /// A file this reader does not take (another writer's, or a column it cannot give).
    Unsupported(String),
    /// A file of this writer that is damaged.
    Malformed(String),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

impl From<Malformed> for ReadError {
    fn from(_: Malformed) -> Self {
        ReadError::Malformed("a footer or page header that is not thrift".into())
    }
}

impl From<Truncated> for ReadError {
    fn from(_: Truncated) -> Self {
        ReadError::Malformed("a page cut short".into())
    }
}

fn unsupported<T>(why: String) -> Result<T, ReadError> {
    Err(ReadError::Unsupported(why))
}

/// Where one column chunk is in the file.
#[derive(Clone, Copy, Default)]
struct Chunk {
    start: u64,
    len: u64,
    codec: i32,
    values: i64,
}

/// A column asked for: its leaf in the file and the Arrow type it is read as.
struct Wanted {
    name: String,
    leaf: usize,
    optional: bool,
    data_type: DataType,
}

/// An open file: its footer read, each asked-for column's chunks located.
pub struct ParquetReader {
    file: File,
    columns: Vec<Wanted>,
    /// Per row group: its rows, the chunks of the asked-for columns in their order, and the
    /// other columns' chunks (only their checksums are read).
    groups: Vec<(i64, Vec<Chunk>, Vec<Chunk>)>,
    raw: Vec<u8>,
    page: Vec<u8>,
}

/// The physical type a column is read as `data_type` from.
fn physical_of(data_type: &DataType) -> Option<i32> {
    match data_type {
        DataType::Boolean => Some(BOOLEAN),
        DataType::Int16 | DataType::Int32 => Some(INT32),
        DataType::Int64 => Some(INT64),
        DataType::Dictionary(k, v) if **k == DataType::Int32 && **v == DataType::Utf8 => {
            Some(BYTE_ARRAY)
        }
        _ => None,
    }
}

/// A leaf of the file's schema: (name, physical type, optional).
type Leaf = (String, i32, bool);

fn schema_element(r: &mut Reader) -> Result<(Leaf, i32), ReadError> {
    let (mut name, mut kind, mut optional, mut children) = (String::new(), -1, false, 0);
    r.begin();
    while let Some((id, t)) = r.field()? {
        match id {
            1 => kind = r.i32()?,
            3 => optional = r.i32()? == 1,
            4 => name = String::from_utf8_lossy(r.binary()?).into_owned(),
            5 => children = r.i32()?,
            _ => r.skip(t)?,
        }
    }
    Ok(((name, kind, optional), children))
}

/// A ColumnChunk as the footer lists it: its leaf's name (path), where it is, its encodings.
type ListedChunk = (String, Chunk, Vec<i32>);

/// A ColumnChunk: its leaf's name (path) and where it is.
fn column_chunk(r: &mut Reader) -> Result<ListedChunk, ReadError> {
    let (mut path, mut chunk, mut encodings) = (String::new(), Chunk::default(), Vec::new());
    let (mut data_at, mut dictionary_at) = (None, None);
    r.begin();
    while let Some((id, t)) = r.field()? {
        if id != 3 {
            r.skip(t)?;
            continue;
        }
        r.begin();
        while let Some((id, t)) = r.field()? {
            match id {
                2 => {
                    let (_, n) = r.list()?;
                    for _ in 0..n {
                        encodings.push(r.i32()?);
                    }
                }
                3 => {
                    let (_, n) = r.list()?;
                    let parts: Result<Vec<_>, _> = (0..n).map(|_| r.binary()).collect();
                    let parts: Vec<String> = parts?
                        .iter()
                        .map(|p| String::from_utf8_lossy(p).into_owned())
                        .collect();
                    path = parts.join(".");
                }
                4 => chunk.codec = r.i32()?,
                5 => chunk.values = r.i64()?,
                7 => chunk.len = u64::try_from(r.i64()?).map_err(|_| Malformed)?,
                9 => data_at = Some(r.i64()?),
                11 => dictionary_at = Some(r.i64()?),
                _ => r.skip(t)?,
            }
        }
    }
    let start = dictionary_at.or(data_at).ok_or(Malformed)?;
    chunk.start = u64::try_from(start).map_err(|_| Malformed)?;
    Ok((path, chunk, encodings))
}

impl ParquetReader {
    /// Open `path` for the columns of `wanted` (names and the Arrow types to give: integers,
    /// booleans, dictionary<int32, utf8> for strings).
    pub fn open(path: &str, wanted: &Schema) -> Result<ParquetReader, ReadError> {
        let file = File::open(path)?;
        let size = file.metadata()?.len();
        if size < 12 {
            return unsupported("not a Parquet file".into());
        }
        let mut tail = [0u8; 8];
        file.read_exact_at(&mut tail, size - 8)?;
        if &tail[4..] != b"PAR1" {
            return unsupported("not a Parquet file".into());
        }
        let footer_len = u64::from(u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")));
        if footer_len + 12 > size {
            return Err(ReadError::Malformed("a footer longer than the file".into()));
        }
        let mut footer = vec![0u8; footer_len as usize];
        file.read_exact_at(&mut footer, size - 8 - footer_len)?;

        let mut r = Reader::new(&footer);
        let mut leaves: Vec<Leaf> = Vec::new();
        let mut groups_raw: Vec<(i64, Vec<ListedChunk>)> = Vec::new();
        let mut created_by = String::new();
        while let Some((id, t)) = r.field()? {
            match id {
                2 => {
                    let (_, n) = r.list()?;
                    for k in 0..n {
                        let (leaf, children) = schema_element(&mut r)?;
                        if k > 0 && children > 0 {
                            return unsupported("nested columns".into());
                        }
                        if k > 0 {
                            leaves.push(leaf);
                        }
                    }
                }
                4 => {
                    let (_, n) = r.list()?;
                    for _ in 0..n {
                        let (mut rows, mut chunks) = (0, Vec::new());
                        r.begin();
                        while let Some((id, t)) = r.field()? {
                            match id {
                                1 => {
                                    let (_, n) = r.list()?;
                                    for _ in 0..n {
                                        chunks.push(column_chunk(&mut r)?);
                                    }
                                }
                                3 => rows = r.i64()?,
                                _ => r.skip(t)?,
                            }
                        }
                        groups_raw.push((rows, chunks));
                    }
                }
                6 => created_by = String::from_utf8_lossy(r.binary()?).into_owned(),
                _ => r.skip(t)?,
            }
        }
        if !created_by.starts_with(CREATED_BY) {
            return unsupported(format!("written by {created_by:?}"));
        }
        let mut columns = Vec::new();
        for field in wanted.fields() {
            let Some(leaf) = leaves.iter().position(|l| &l.0 == field.name()) else {
                return unsupported(format!("no column {}", field.name()));
            };
            if physical_of(field.data_type()) != Some(leaves[leaf].1) {
                return unsupported(format!("column {} as {}", field.name(), field.data_type()));
            }
            columns.push(Wanted {
                name: field.name().clone(),
                leaf,
                optional: leaves[leaf].2,
                data_type: field.data_type().clone(),
            });
        }
        let mut groups = Vec::new();
        for (rows, chunks) in groups_raw {
            if chunks.len() != leaves.len() {
                return Err(ReadError::Malformed(
                    "a row group without every column".into(),
                ));
            }
            let mut located = Vec::new();
            for c in &columns {
                let (path, chunk, encodings) = &chunks[c.leaf];
                if path != &c.name || chunk.values != rows {
                    return Err(ReadError::Malformed(format!("column {}'s chunk", c.name)));
                }
                let known = [
                    PLAIN,
                    PLAIN_DICTIONARY,
                    3,
                    DELTA_BINARY_PACKED,
                    RLE_DICTIONARY,
                ];
                if !matches!(chunk.codec, UNCOMPRESSED | LZ4_RAW)
                    || encodings.iter().any(|e| !known.contains(e))
                {
                    return unsupported(format!("column {}'s codec or encodings", c.name));
                }
                located.push(*chunk);
            }
            let others = (0..leaves.len())
                .filter(|leaf| !columns.iter().any(|c| c.leaf == *leaf))
                .map(|leaf| chunks[leaf].1)
                .collect();
            groups.push((rows, located, others));
        }
        Ok(ParquetReader {
            file,
            columns,
            groups,
            raw: Vec::new(),
            page: Vec::new(),
        })
    }

    pub fn row_groups(&self) -> usize {
        self.groups.len()
    }

    /// Row group `g`'s asked-for columns, by name; its other columns' pages only checked.
    pub fn read(&mut self, g: usize) -> Result<Vec<(String, ArrayRef)>, ReadError> {
        let (rows, chunks, others) = self.groups[g].clone();
        for chunk in &others {
            check_pages(chunk_bytes(&self.file, &mut self.raw, chunk)?)?;
        }
        let rows = usize::try_from(rows).map_err(|_| Malformed)?;
        let mut out = Vec::with_capacity(chunks.len());
        for (k, chunk) in chunks.iter().enumerate() {
            let bytes = chunk_bytes(&self.file, &mut self.raw, chunk)?;
            let column = &self.columns[k];
            let array = read_chunk(column, *chunk, rows, bytes, &mut self.page)?;
            out.push((column.name.clone(), array));
        }
        Ok(out)
    }
}

/// A column chunk's bytes, read into `raw` (reused from chunk to chunk).
fn chunk_bytes<'a>(file: &File, raw: &'a mut Vec<u8>, chunk: &Chunk) -> std::io::Result<&'a [u8]> {
    let len = chunk.len as usize;
    grow(raw, len);
    file.read_exact_at(&mut raw[..len], chunk.start)?;
    Ok(&raw[..len])
}

/// `buffer` at least `len` bytes long; only new room is zeroed (never the bytes that are
/// about to be overwritten again).
fn grow(buffer: &mut Vec<u8>, len: usize) {
    if buffer.len() < len {
        buffer.resize(len, 0);
    }
}

/// One page: (header fields we use, its body as stored).
struct Page<'a> {
    kind: i32,
    values: usize,
    encoding: i32,
    raw_len: usize,
    body: &'a [u8],
}

fn page_at<'a>(bytes: &'a [u8], at: &mut usize) -> Result<Page<'a>, ReadError> {
    let mut r = Reader::new(bytes.get(*at..).ok_or(Malformed)?);
    let (mut kind, mut raw_len, mut stored_len, mut values, mut encoding) = (-1, 0, 0, 0, PLAIN);
    let mut crc = None;
    while let Some((id, t)) = r.field()? {
        match id {
            1 => kind = r.i32()?,
            2 => raw_len = r.i32()?,
            3 => stored_len = r.i32()?,
            4 => crc = Some(r.i32()?),
            5 | 7 => {
                r.begin();
                while let Some((id, t)) = r.field()? {
                    match id {
                        1 => values = r.i32()?,
                        2 => encoding = r.i32()?,
                        _ => r.skip(t)?,
                    }
                }
            }
            _ => r.skip(t)?,
        }
    }
    let start = *at + r.at;
    let end = start + usize::try_from(stored_len).map_err(|_| Malformed)?;
    let body = bytes.get(start..end).ok_or(Truncated)?;
    check_crc(body, crc)?;
    *at = end;
    Ok(Page {
        kind,
        values: usize::try_from(values).map_err(|_| Malformed)?,
        encoding,
        raw_len: usize::try_from(raw_len).map_err(|_| Malformed)?,
        body,
    })
}

/// A page whose stored bytes do not match its header's checksum was damaged after it was
/// written: refused, rather than decoded into other values. (Files written before the core
/// kept checksums have none: nothing to check.)
fn check_crc(stored: &[u8], crc: Option<i32>) -> Result<(), ReadError> {
    match crc {
        Some(crc) if crc != page_crc(stored) => Err(ReadError::Malformed(
            "a page whose checksum does not match".into(),
        )),
        _ => Ok(()),
    }
}

/// Every page of a chunk that is not decoded here, its checksum checked: the other readers of
/// the file (DuckDB) do not check them, and a damaged column is as wrong there.
fn check_pages(bytes: &[u8]) -> Result<(), ReadError> {
    let mut at = 0;
    while at < bytes.len() {
        page_at(bytes, &mut at)?;
    }
    Ok(())
}

/// The values one column chunk holds, gathered over its pages.
struct Gathered {
    /// Each row's definition bit (optional columns).
    valid: BooleanBufferBuilder,
    rows: usize,
    present: usize,
    i32s: Vec<i32>,
    i64s: Vec<i64>,
    bools: BooleanBufferBuilder,
    keys: Vec<u32>,
    dictionary: Option<StringArray>,
}

fn ints<T: Unpacked>(
    encoding: i32,
    body: &[u8],
    n: usize,
    out: &mut Vec<T>,
) -> Result<(), ReadError> {
    match encoding {
        PLAIN => plain(body, n, out)?,
        DELTA_BINARY_PACKED => {
            let before = out.len();
            delta_binary_packed(body, out)?;
            if out.len() - before != n {
                return Err(ReadError::Malformed("a page's count".into()));
            }
        }
        e => return unsupported(format!("integers in encoding {e}")),
    }
    Ok(())
}

fn read_chunk(
    column: &Wanted,
    chunk: Chunk,
    rows: usize,
    bytes: &[u8],
    page_buf: &mut Vec<u8>,
) -> Result<ArrayRef, ReadError> {
    let mut got = Gathered {
        valid: BooleanBufferBuilder::new(if column.optional { rows } else { 0 }),
        rows: 0,
        present: 0,
        i32s: Vec::new(),
        i64s: Vec::new(),
        bools: BooleanBufferBuilder::new(0),
        keys: Vec::new(),
        dictionary: None,
    };
    let mut at = 0;
    let physical = physical_of(&column.data_type).expect("checked at open");
    while got.rows < rows {
        let page = page_at(bytes, &mut at)?;
        let body = match chunk.codec {
            LZ4_RAW => {
                grow(page_buf, page.raw_len);
                let n = lz4_flex::block::decompress_into(page.body, &mut page_buf[..page.raw_len])
                    .map_err(|_| ReadError::Malformed("an LZ4 page".into()))?;
                &page_buf[..n]
            }
            _ => page.body,
        };
        if page.kind == DICTIONARY_PAGE {
            let (offsets, data) = plain_byte_arrays(body, page.values)?;
            let strings = StringArray::try_new(
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                data.into(),
                None,
            )
            .map_err(|e| ReadError::Malformed(e.to_string()))?;
            got.dictionary = Some(strings);
            continue;
        }
        if page.kind != DATA_PAGE {
            return unsupported(format!("page type {}", page.kind));
        }
        let n = page.values;
        let mut body = body;
        let present = if column.optional {
            let len = body.get(..4).ok_or(Truncated)?;
            let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
            let (present, _) = levels(body.get(4..4 + len).ok_or(Truncated)?, n, &mut got.valid)?;
            body = &body[4 + len..];
            present
        } else {
            n
        };
        got.rows += n;
        got.present += present;
        match physical {
            BOOLEAN => plain_booleans(body, present, &mut got.bools)?,
            INT32 => ints(page.encoding, body, present, &mut got.i32s)?,
            INT64 => ints(page.encoding, body, present, &mut got.i64s)?,
            // a page of nulls only has no values, whatever its encoding says
            _ if present == 0 => {}
            _ => {
                if !matches!(page.encoding, RLE_DICTIONARY | PLAIN_DICTIONARY) {
                    return unsupported(format!("strings in encoding {}", page.encoding));
                }
                let width = *body.first().ok_or(Truncated)?;
                hybrid(&body[1..], width, present, &mut got.keys)?;
            }
        }
    }
    if got.rows != rows {
        return Err(ReadError::Malformed(format!(
            "column {}'s pages",
            column.name
        )));
    }
    assemble(column, got)
}

/// Values of the present rows spread over every row (a null row holds the default), 64 rows
/// of the validity bitmap at a time: a word all set is one copy, any other a fill and a store
/// per set bit.
fn spread<T: Copy + Default>(values: Vec<T>, valid: Option<&NullBuffer>) -> Vec<T> {
    let Some(valid) = valid else {
        return values;
    };
    let mut out = Vec::with_capacity(valid.len());
    let mut next = 0;
    let mut take = |out: &mut Vec<T>, word: u64, rows: usize| {
        if rows == 64 && word == u64::MAX {
            out.extend_from_slice(&values[next..next + 64]);
            next += 64;
        } else {
            // defaults, then each set bit's value in its row, lowest bit first
            let base = out.len();
            out.resize(base + rows, T::default());
            let mut bits = word;
            while bits != 0 {
                out[base + bits.trailing_zeros() as usize] = values[next];
                next += 1;
                bits &= bits - 1;
            }
        }
    };
    let chunks = valid.inner().bit_chunks();
    for word in chunks.iter() {
        take(&mut out, word, 64);
    }
    take(&mut out, chunks.remainder_bits(), chunks.remainder_len());
    out
}

fn assemble(column: &Wanted, mut got: Gathered) -> Result<ArrayRef, ReadError> {
    let nulls = (got.present < got.rows).then(|| NullBuffer::new(got.valid.finish()));
    let valid = nulls.as_ref();
    Ok(match &column.data_type {
        DataType::Boolean => {
            let present = got.bools.finish();
            let values = match valid {
                None => present,
                Some(_) => BooleanBuffer::from(spread(present.iter().collect(), valid).as_slice()),
            };
            Arc::new(BooleanArray::new(values, nulls))
        }
        DataType::Int16 => {
            let values: Vec<i16> = spread(got.i32s, valid)
                .into_iter()
                .map(|v| v as i16)
                .collect();
            Arc::new(PrimitiveArray::<Int16Type>::new(values.into(), nulls))
        }
        DataType::Int32 => Arc::new(PrimitiveArray::<Int32Type>::new(
            spread(got.i32s, valid).into(),
            nulls,
        )),
        DataType::Int64 => Arc::new(PrimitiveArray::<Int64Type>::new(
            spread(got.i64s, valid).into(),
            nulls,
        )),
        _ => {
            let dictionary = match got.dictionary {
                Some(d) => d,
                None if got.keys.is_empty() => StringArray::from(Vec::<&str>::new()),
                None => {
                    return Err(ReadError::Malformed(format!(
                        "column {} has no dictionary",
                        column.name
                    )))
                }
            };
            let entries = dictionary.len();
            // the largest key, not the first too large: a loop with no exit vectorises
            let largest = got.keys.iter().fold(0, |m, &k| m.max(k));
            if largest as usize >= entries.max(1) {
                return Err(ReadError::Malformed(format!(
                    "column {}: a key past its dictionary",
                    column.name
                )));
            }
            let keys: Vec<i32> = spread(got.keys, valid)
                .into_iter()
                .map(|k| k as i32)
                .collect();
            let keys = PrimitiveArray::<Int32Type>::new(keys.into(), nulls);
            // SAFETY: every present key is checked above; a null row's key is 0, and a
            // dictionary is empty only when every row is null
            Arc::new(unsafe {
                DictionaryArray::<Int32Type>::new_unchecked(keys, Arc::new(dictionary))
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_spread_over_the_valid_rows_at_any_offset() {
        for len in [0usize, 1, 63, 64, 65, 130, 300] {
            for pattern in 0..5u64 {
                // all valid, none, alternating, runs of 64, sparse
                let valid = |row: usize| match pattern {
                    0 => true,
                    1 => false,
                    2 => row.is_multiple_of(2),
                    3 => (row / 64).is_multiple_of(2),
                    _ => row % 7 == 3,
                };
                for offset in [0usize, 3] {
                    let bits: Vec<bool> = (0..len + offset)
                        .map(|r| r < offset || valid(r - offset))
                        .collect();
                    let nulls = NullBuffer::from(bits).slice(offset, len);
                    let values: Vec<i64> = (0..nulls.len() - nulls.null_count())
                        .map(|k| k as i64 + 1)
                        .collect();
                    let mut expected = vec![0i64; len];
                    let mut next = values.iter();
                    for (row, slot) in expected.iter_mut().enumerate() {
                        if nulls.is_valid(row) {
                            *slot = *next.next().unwrap();
                        }
                    }
                    assert_eq!(
                        spread(values, Some(&nulls)),
                        expected,
                        "{len} {pattern} {offset}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_page_whose_bytes_changed_is_refused() {
        let stored = b"the page as written";
        assert!(check_crc(stored, Some(page_crc(stored))).is_ok());
        assert!(check_crc(stored, None).is_ok()); // no checksum written: nothing to check
        let mut damaged = stored.to_vec();
        damaged[3] ^= 0x10;
        assert!(matches!(
            check_crc(&damaged, Some(page_crc(stored))),
            Err(ReadError::Malformed(why)) if why == "a page whose checksum does not match"
        ));
    }

    /// The CPU seconds of reading every row group of an events.parquet the core wrote, as the
    /// streaming pass reads it (the first round also pays for the process's fresh memory):
    /// `BLKSCOPE_READ_FILE=events.parquet cargo test --release -- --ignored --nocapture read_speed`
    /// (BLKSCOPE_READ_ROUNDS: how many times, 5 unless set)
    #[test]
    #[ignore = "a measurement, on a file named by BLKSCOPE_READ_FILE"]
    fn read_speed() {
        use arrow_schema::Field;
        let path = std::env::var("BLKSCOPE_READ_FILE").expect("BLKSCOPE_READ_FILE");
        let string = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let columns = [
            ("time_ns", DataType::Int64),
            ("input_id", DataType::Int16),
            ("line_no", DataType::Int64),
            ("dev_major", DataType::Int32),
            ("dev_minor", DataType::Int32),
            ("action", string.clone()),
            ("op", string.clone()),
            ("flush", DataType::Boolean),
            ("rwbs", string.clone()),
            ("sector", DataType::Int64),
            ("nsectors", DataType::Int32),
            ("split_sector", DataType::Int64),
            ("remap_dev_major", DataType::Int32),
            ("remap_dev_minor", DataType::Int32),
            ("remap_sector", DataType::Int64),
            ("error", DataType::Int32),
            ("pid", DataType::Int64),
            ("comm", string),
        ];
        let schema = Schema::new(
            columns
                .into_iter()
                .map(|(name, t)| Field::new(name, t, true))
                .collect::<Vec<_>>(),
        );
        // this thread's CPU seconds, to the nanosecond, and the process's user and system
        // seconds (to the tick)
        let cpu_seconds = || {
            let on_cpu = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
            let on_cpu = on_cpu.split(' ').next().unwrap().parse::<f64>().unwrap() / 1e9;
            let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
            let fields: Vec<&str> = stat.rsplit(") ").next().unwrap().split(' ').collect();
            let ticks = |k: usize| fields[k].parse::<f64>().unwrap() / 100.0;
            (on_cpu, ticks(11), ticks(12))
        };
        let rounds = std::env::var("BLKSCOPE_READ_ROUNDS").map_or(5, |r| r.parse().unwrap());
        for _ in 0..rounds {
            let (cpu, user, system) = cpu_seconds();
            let mut reader = ParquetReader::open(&path, &schema).unwrap();
            let mut rows = 0;
            for g in 0..reader.row_groups() {
                let columns = reader.read(g).unwrap();
                rows += columns[0].1.len();
                std::hint::black_box(columns);
            }
            let (c, u, s) = cpu_seconds();
            println!(
                "{rows} rows: {:.3} CPU-s ({:.2} s user, {:.2} s system)",
                c - cpu,
                u - user,
                s - system
            );
        }
    }
}
