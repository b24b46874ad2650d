//! Rows of the events table (schemas/events.py declares it), built column by column: the
//! columns both readers, blkparse text and blktrace binaries, fill.

use std::sync::{Arc, LazyLock};

use arrow_array::types::{ArrowPrimitiveType, Int32Type, Int64Type};
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Int16Array, Int32Array, Int64Array, PrimitiveArray,
    StringArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};

use super::action::Action;
use super::recycle::{buffer_of, recycle, scalars_of, Recyclable};
use super::rwbs::{Rwbs, FLAG_BITS};

/// One event as blkparse prints it: the header, then what its action prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    pub dev_major: i32,
    pub dev_minor: i32,
    pub cpu: i32,
    pub seq: i64,
    pub time_ns: i64,
    pub pid: i64,
    pub action: Action,
    pub rwbs: Rwbs,
    pub sector: Option<i64>,
    pub nsectors: Option<i32>,
    pub split_sector: Option<i64>,
    pub error: Option<i32>,
    pub comm: Option<&'a str>,
    pub depth: Option<i32>,
    /// The line blkparse prints the event on (the analysis breaks time ties by it).
    pub line_no: i64,
}

/// Which of a row's optional columns hold a value: one bit each, a byte per row. The
/// validity of every column is made from these bytes at the end, in one pass for all of them
/// (`bit_planes`), not a bit at a time as the rows come.
#[derive(Clone, Copy)]
enum Present {
    Sector = 1,
    Nsectors = 2,
    SplitSector = 4,
    Error = 8,
    Comm = 16,
    Depth = 32,
}

impl Present {
    /// Every column's bit, in the order `EventColumns::finish` takes their validity.
    const ALL: [Present; 6] = [
        Present::Sector,
        Present::Nsectors,
        Present::SplitSector,
        Present::Error,
        Present::Comm,
        Present::Depth,
    ];

    /// The bits of an event's values.
    #[inline(always)]
    fn of(e: &Event<'_>) -> u8 {
        let bit = |set: bool, bit: Present| if set { bit as u8 } else { 0 };
        bit(e.sector.is_some(), Present::Sector)
            | bit(e.nsectors.is_some(), Present::Nsectors)
            | bit(e.split_sector.is_some(), Present::SplitSector)
            | bit(e.error.is_some(), Present::Error)
            | bit(e.comm.is_some(), Present::Comm)
            | bit(e.depth.is_some(), Present::Depth)
    }

    /// The validity of each column over rows whose bytes are `present`, in `ALL`'s order:
    /// none for a column with a value on every row.
    fn validities(present: &[u8]) -> [Option<NullBuffer>; 6] {
        bit_planes(present, Present::ALL.map(|p| p as u8))
            .map(|bits| (bits.count_set_bits() != bits.len()).then(|| NullBuffer::new(bits)))
    }
}

/// One column's values, written by row into room made ahead for every column at once
/// (`EventColumns::push` checks the room once per row, not once per column).
struct Column<T> {
    /// Rows 0..EventColumns::rows written; its length is set when the column is finished.
    values: Vec<T>,
}

impl<T: Recyclable> Column<T> {
    fn with_capacity(rows: usize) -> Self {
        Column {
            values: T::pool().take(rows),
        }
    }

    /// Room for `capacity` rows, the first `rows` written.
    fn grow(&mut self, rows: usize, capacity: usize) {
        // SAFETY: rows 0..rows are written, and within the capacity (a growing copy keeps them)
        unsafe { self.values.set_len(rows) };
        self.values.reserve_exact(capacity - rows);
    }

    /// Write row `row`.
    ///
    /// # Safety
    /// `row` is below the capacity made (`with_capacity`, `grow`).
    #[inline(always)]
    unsafe fn set(&mut self, row: usize, value: T) {
        debug_assert!(row < self.values.capacity());
        self.values.as_mut_ptr().add(row).write(value)
    }

    /// The values of rows 0..rows, all written.
    fn finish(mut self, rows: usize) -> Vec<T> {
        assert!(rows <= self.values.capacity());
        // SAFETY: every row below `rows` was written by `set`
        unsafe { self.values.set_len(rows) };
        self.values
    }
}

/// A column whose rows may have no value (0 where none; which rows have one, `Present` says).
struct Optional<T: ArrowPrimitiveType>
where
    T::Native: Recyclable,
{
    values: Column<T::Native>,
}

impl<T: ArrowPrimitiveType> Optional<T>
where
    T::Native: Recyclable,
{
    fn with_capacity(rows: usize) -> Self {
        Optional {
            values: Column::with_capacity(rows),
        }
    }

    /// # Safety
    /// As `Column::set`.
    #[inline(always)]
    unsafe fn set(&mut self, row: usize, value: Option<T::Native>) {
        self.values.set(row, value.unwrap_or_default());
    }

    fn finish(self, rows: usize, validity: Option<NullBuffer>) -> ArrayRef {
        let values = scalars_of(self.values.finish(rows));
        Arc::new(PrimitiveArray::<T>::new(values, validity))
    }
}

/// A column of text, maybe missing.
struct Texts {
    /// Row k's text is bytes[offsets[k]..offsets[k + 1]].
    offsets: Column<i32>,
    bytes: Vec<u8>,
}

impl Texts {
    fn with_capacity(rows: usize, bytes: usize) -> Texts {
        let mut offsets = Column::with_capacity(rows + 1);
        // SAFETY: within the capacity just made
        unsafe { offsets.set(0, 0) };
        Texts {
            offsets,
            bytes: u8::pool().take(bytes),
        }
    }

    fn grow(&mut self, rows: usize, capacity: usize) {
        self.offsets.grow(rows + 1, capacity + 1);
    }

    /// # Safety
    /// As `Column::set`.
    #[inline(always)]
    unsafe fn set(&mut self, row: usize, text: Option<&str>) {
        if let Some(text) = text {
            self.bytes.extend_from_slice(text.as_bytes());
        }
        self.offsets.set(row + 1, self.bytes.len() as i32);
    }

    fn finish(self, rows: usize, nulls: Option<NullBuffer>) -> ArrayRef {
        let offsets = OffsetBuffer::new(scalars_of(self.offsets.finish(rows + 1)));
        // SAFETY: the offsets grow with the bytes they index, and every piece is a &str.
        Arc::new(unsafe { StringArray::new_unchecked(offsets, buffer_of(self.bytes), nulls) })
    }
}

/// Each row's text from a small vocabulary (the action letters, the RWBS texts).
fn vocabulary_texts(codes: &[u8], vocabulary: &[String]) -> ArrayRef {
    // each text as (length, its bytes padded to a word): a row is one 8-byte copy
    let mut table = [(0usize, [0u8; 8]); 256];
    for (entry, text) in table.iter_mut().zip(vocabulary) {
        assert!(text.len() <= 8, "a vocabulary of short texts: {text:?}");
        entry.0 = text.len();
        entry.1[..text.len()].copy_from_slice(text.as_bytes());
    }
    if !codes.iter().all(|&c| table[usize::from(c)].0 == 1) {
        return texts_of(codes, &table);
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(
        (0..=codes.len() as i32).collect::<Vec<_>>(),
    ));
    let bytes: Vec<u8> = codes.iter().map(|&c| table[usize::from(c)].1[0]).collect();
    // SAFETY: one offset per letter, and every letter is the one byte of a one-byte String.
    Arc::new(unsafe { StringArray::new_unchecked(offsets, bytes.into(), None) })
}

/// Each row's text of up to 8 bytes, written a word at a time into room made ahead.
fn texts_of(codes: &[u8], table: &[(usize, [u8; 8]); 256]) -> ArrayRef {
    let mut offsets = Vec::with_capacity(codes.len() + 1);
    let mut bytes = vec![0u8; codes.len() * 8 + 8];
    let mut at = 0;
    offsets.push(0);
    for &code in codes {
        let (len, text) = &table[usize::from(code)];
        bytes[at..at + 8].copy_from_slice(text);
        at += len;
        offsets.push(at as i32);
    }
    bytes.truncate(at);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    // SAFETY: the offsets grow with the bytes they index, and every piece is a String's bytes.
    Arc::new(unsafe { StringArray::new_unchecked(offsets, bytes.into(), None) })
}

/// How `EventColumns::finish` hands over the action, rwbs and op columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vocabulary {
    /// As the strings they stand for.
    Texts,
    /// As dictionary arrays of each row's code into the strings: no string is written per row,
    /// and the Parquet writer stores them as the strings, looking a string up once per code
    /// instead of once per row.
    Codes,
}

/// The action letters, by an action's index in Action::ALL.
static ACTION_TEXTS: LazyLock<Vec<String>> =
    LazyLock::new(|| Action::ALL.iter().map(|a| a.letters().into()).collect());

/// The RWBS texts, by RWBS code.
static RWBS_TEXTS: LazyLock<Vec<String>> =
    LazyLock::new(|| (0..128).map(|c| Rwbs::from_code(c).text()).collect());

/// The op letters, by RWBS code.
static OP_TEXTS: LazyLock<Vec<String>> = LazyLock::new(|| {
    (0..128)
        .map(|c| Rwbs::from_code(c).op.letter().into())
        .collect()
});

/// Each row's code as a dictionary array into `vocabulary` (every code below its length).
fn vocabulary_codes(keys: &Int32Array, vocabulary: &[String]) -> ArrayRef {
    debug_assert!(keys
        .values()
        .iter()
        .all(|&k| (k as usize) < vocabulary.len()));
    let values: ArrayRef = Arc::new(StringArray::from_iter_values(vocabulary));
    // SAFETY: every key is a code of the vocabulary, so below its length, and none is null
    Arc::new(unsafe { DictionaryArray::<Int32Type>::new_unchecked(keys.clone(), values) })
}

/// A column of small codes as dictionary keys.
fn keys_of(codes: &[u8]) -> Int32Array {
    let mut keys = i32::pool().take(codes.len());
    keys.extend(codes.iter().map(|&c| i32::from(c)));
    Int32Array::new(scalars_of(keys), None)
}

/// The action, rwbs and op columns of rows whose action and RWBS codes are these.
fn vocabulary_columns(
    action: &[u8],
    rwbs: &[u8],
    vocabulary: Vocabulary,
) -> [(&'static str, ArrayRef); 3] {
    match vocabulary {
        Vocabulary::Texts => [
            ("action", vocabulary_texts(action, &ACTION_TEXTS)),
            ("rwbs", vocabulary_texts(rwbs, &RWBS_TEXTS)),
            ("op", vocabulary_texts(rwbs, &OP_TEXTS)),
        ],
        Vocabulary::Codes => {
            // (rwbs and op share their keys: both are looked up by the RWBS code)
            let rwbs_keys = keys_of(rwbs);
            [
                ("action", vocabulary_codes(&keys_of(action), &ACTION_TEXTS)),
                ("rwbs", vocabulary_codes(&rwbs_keys, &RWBS_TEXTS)),
                ("op", vocabulary_codes(&rwbs_keys, &OP_TEXTS)),
            ]
        }
    }
}

/// For each of `masks`, one bit per byte of `bytes`, set where the byte has the mask's bits:
/// every mask in the same pass, 64 bytes a word.
fn bit_planes<const N: usize>(bytes: &[u8], masks: [u8; N]) -> [BooleanBuffer; N] {
    let words = bytes.len().div_ceil(64);
    let mut planes: [Vec<u64>; N] = std::array::from_fn(|_| Vec::with_capacity(words));
    let mut chunks = bytes.chunks_exact(64);
    for block in &mut chunks {
        let block: &[u8; 64] = block.try_into().expect("a chunk of 64 bytes");
        for (plane, word) in planes.iter_mut().zip(block_words(block, &masks)) {
            plane.push(word);
        }
    }
    if !chunks.remainder().is_empty() {
        // the last rows padded with zeros: bits past the last row are clear
        let mut block = [0u8; 64];
        block[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        for (plane, word) in planes.iter_mut().zip(block_words(&block, &masks)) {
            plane.push(word);
        }
    }
    planes.map(|words| BooleanBuffer::new(Buffer::from_vec(words), 0, bytes.len()))
}

/// Each mask's word of a block of 64 bytes: bit k set where byte k has the mask's bits.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block_words<const N: usize>(block: &[u8; 64], masks: &[u8; N]) -> [u64; N] {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64; each load reads 16 of the block's 64 bytes
    unsafe {
        let lanes: [__m128i; 4] =
            std::array::from_fn(|k| _mm_loadu_si128(block.as_ptr().add(16 * k).cast()));
        masks.map(|mask| {
            let mask = _mm_set1_epi8(mask as i8);
            lanes.iter().enumerate().fold(0u64, |word, (k, &lane)| {
                let hit = _mm_cmpeq_epi8(_mm_and_si128(lane, mask), mask);
                word | u64::from(_mm_movemask_epi8(hit) as u16) << (16 * k)
            })
        })
    }
}

/// Each mask's word of a block of 64 bytes: bit k set where byte k has the mask's bits.
#[cfg(not(target_arch = "x86_64"))]
fn block_words<const N: usize>(block: &[u8; 64], masks: &[u8; N]) -> [u64; N] {
    masks.map(|mask| {
        block.iter().enumerate().fold(0u64, |word, (k, &b)| {
            word | u64::from(b & mask == mask) << k
        })
    })
}

/// The shared columns of many events.
pub struct EventColumns {
    /// Rows written.
    rows: usize,
    /// Rows every column has room for.
    capacity: usize,
    dev_major: Column<i32>,
    dev_minor: Column<i32>,
    cpu: Column<i32>,
    seq: Column<i64>,
    time_ns: Column<i64>,
    pid: Column<i64>,
    /// The index of each row's action in Action::ALL.
    action: Column<u8>,
    /// Each row's RWBS code (Rwbs::code): the rwbs and op columns and the flags.
    rwbs: Column<u8>,
    sector: Optional<Int64Type>,
    nsectors: Optional<Int32Type>,
    split_sector: Optional<Int64Type>,
    error: Optional<Int32Type>,
    comm: Texts,
    depth: Optional<Int32Type>,
    line_no: Column<i64>,
    /// Each row's `Present` bits.
    present: Column<u8>,
    /// The largest end of any row's sector range (sector + nsectors, or split_sector): when it
    /// is in range, no row needs the range check (ingest/codes.py, past_last_sector_rows).
    largest_sector_end: i64,
}

impl EventColumns {
    /// Room for `rows` events whose process names take about `comm_bytes` bytes.
    pub fn with_capacity(rows: usize, comm_bytes: usize) -> EventColumns {
        let rows = rows.max(1);
        EventColumns {
            rows: 0,
            capacity: rows,
            dev_major: Column::with_capacity(rows),
            dev_minor: Column::with_capacity(rows),
            cpu: Column::with_capacity(rows),
            seq: Column::with_capacity(rows),
            time_ns: Column::with_capacity(rows),
            pid: Column::with_capacity(rows),
            action: Column::with_capacity(rows),
            rwbs: Column::with_capacity(rows),
            sector: Optional::with_capacity(rows),
            nsectors: Optional::with_capacity(rows),
            split_sector: Optional::with_capacity(rows),
            error: Optional::with_capacity(rows),
            comm: Texts::with_capacity(rows, comm_bytes),
            depth: Optional::with_capacity(rows),
            line_no: Column::with_capacity(rows),
            present: Column::with_capacity(rows),
            largest_sector_end: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    /// The largest end of any row's sector range so far (0 when no row has a sector): sector
    /// plus nsectors, or split_sector, saturating.
    pub fn largest_sector_end(&self) -> i64 {
        self.largest_sector_end
    }

    /// Twice the room, for every column.
    #[cold]
    fn grow(&mut self) {
        let (rows, capacity) = (self.rows, self.capacity * 2);
        self.dev_major.grow(rows, capacity);
        self.dev_minor.grow(rows, capacity);
        self.cpu.grow(rows, capacity);
        self.seq.grow(rows, capacity);
        self.time_ns.grow(rows, capacity);
        self.pid.grow(rows, capacity);
        self.action.grow(rows, capacity);
        self.rwbs.grow(rows, capacity);
        self.sector.values.grow(rows, capacity);
        self.nsectors.values.grow(rows, capacity);
        self.split_sector.values.grow(rows, capacity);
        self.error.values.grow(rows, capacity);
        self.comm.grow(rows, capacity);
        self.depth.values.grow(rows, capacity);
        self.line_no.grow(rows, capacity);
        self.present.grow(rows, capacity);
        self.capacity = capacity;
    }

    #[inline(always)]
    pub fn push(&mut self, e: &Event<'_>) {
        if self.rows == self.capacity {
            self.grow();
        }
        let row = self.rows;
        // SAFETY: every column has room for `capacity` rows (made just above when it was full)
        unsafe {
            self.dev_major.set(row, e.dev_major);
            self.dev_minor.set(row, e.dev_minor);
            self.cpu.set(row, e.cpu);
            self.seq.set(row, e.seq);
            self.time_ns.set(row, e.time_ns);
            self.pid.set(row, e.pid);
            self.action.set(row, e.action as u8);
            self.rwbs.set(row, e.rwbs.code());
            self.sector.set(row, e.sector);
            self.nsectors.set(row, e.nsectors);
            self.split_sector.set(row, e.split_sector);
            self.error.set(row, e.error);
            self.comm.set(row, e.comm);
            self.depth.set(row, e.depth);
            self.line_no.set(row, e.line_no);
            self.present.set(row, Present::of(e));
        }
        self.rows += 1;
        let end = e
            .sector
            .unwrap_or(0)
            .saturating_add(i64::from(e.nsectors.unwrap_or(0)))
            .max(e.split_sector.unwrap_or(0));
        self.largest_sector_end = self.largest_sector_end.max(end);
    }

    /// The columns by their events-table names, with `source` and `input_id` the same on
    /// every row; the action, rwbs and op columns as `vocabulary` says.
    pub fn finish(
        self,
        source: &str,
        input_id: i16,
        vocabulary: Vocabulary,
    ) -> Vec<(&'static str, ArrayRef)> {
        let rows = self.len();
        let action_codes = self.action.finish(rows);
        let rwbs_codes = self.rwbs.finish(rows);
        let present = self.present.finish(rows);
        let [action, rwbs_text, op] = vocabulary_columns(&action_codes, &rwbs_codes, vocabulary);
        let [flush, fua, readahead, sync, meta] = bit_planes(&rwbs_codes, FLAG_BITS)
            .map(|bits| Arc::new(BooleanArray::new(bits, None)) as ArrayRef);
        let [sector, nsectors, split_sector, error, comm, depth] = Present::validities(&present);
        for used in [action_codes, rwbs_codes, present] {
            recycle(used);
        }
        vec![
            (
                "dev_major",
                Arc::new(Int32Array::new(
                    scalars_of(self.dev_major.finish(rows)),
                    None,
                )) as ArrayRef,
            ),
            (
                "dev_minor",
                Arc::new(Int32Array::new(
                    scalars_of(self.dev_minor.finish(rows)),
                    None,
                )),
            ),
            (
                "cpu",
                Arc::new(Int32Array::new(scalars_of(self.cpu.finish(rows)), None)),
            ),
            (
                "seq",
                Arc::new(Int64Array::new(scalars_of(self.seq.finish(rows)), None)),
            ),
            (
                "time_ns",
                Arc::new(Int64Array::new(scalars_of(self.time_ns.finish(rows)), None)),
            ),
            (
                "pid",
                Arc::new(Int64Array::new(scalars_of(self.pid.finish(rows)), None)),
            ),
            action,
            rwbs_text,
            op,
            ("flush", flush),
            ("fua", fua),
            ("readahead", readahead),
            ("sync", sync),
            ("meta", meta),
            ("sector", self.sector.finish(rows, sector)),
            ("nsectors", self.nsectors.finish(rows, nsectors)),
            ("split_sector", self.split_sector.finish(rows, split_sector)),
            ("error", self.error.finish(rows, error)),
            ("comm", self.comm.finish(rows, comm)),
            ("depth", self.depth.finish(rows, depth)),
            ("source", constant_strings(source, rows)),
            (
                "line_no",
                Arc::new(Int64Array::new(scalars_of(self.line_no.finish(rows)), None)),
            ),
            ("input_id", Arc::new(Int16Array::from(vec![input_id; rows]))),
        ]
    }
}

/// `rows` copies of one string.
pub fn constant_strings(value: &str, rows: usize) -> ArrayRef {
    let mut offsets = i32::pool().take(rows + 1);
    offsets.extend((0..=rows as i32).map(|k| k * value.len() as i32));
    let total = value.len() * rows;
    let mut bytes = u8::pool().take(total);
    if rows > 0 {
        bytes.extend_from_slice(value.as_bytes());
    }
    // (doubling what is written: a few large copies, as `repeat` makes them)
    while bytes.len() < total {
        bytes.extend_from_within(..bytes.len().min(total - bytes.len()));
    }
    let offsets = OffsetBuffer::new(scalars_of(offsets));
    Arc::new(StringArray::new(offsets, buffer_of(bytes), None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::rwbs::Op;
    use arrow_array::Array;

    fn event(line_no: i64, comm: Option<&str>) -> Event<'_> {
        Event {
            dev_major: 8,
            dev_minor: 0,
            cpu: 1,
            seq: 5,
            time_ns: 102_310,
            pid: 4162,
            action: Action::UnplugTimer,
            rwbs: Rwbs {
                sync: true,
                ..Rwbs::plain(Op::Write)
            },
            sector: Some(1024),
            nsectors: Some(8),
            split_sector: None,
            error: None,
            comm,
            depth: None,
            line_no,
        }
    }

    fn strings(cols: &[(&str, ArrayRef)], name: &str) -> Vec<Option<String>> {
        let array = &cols.iter().find(|(n, _)| *n == name).unwrap().1;
        let array = array.as_any().downcast_ref::<StringArray>().unwrap();
        array.iter().map(|s| s.map(String::from)).collect()
    }

    #[test]
    fn columns_hold_the_rows() {
        let mut cols = EventColumns::with_capacity(1, 0);
        cols.push(&event(1, Some("dd")));
        cols.push(&event(2, None));
        let cols_end = cols.largest_sector_end();
        let out = cols.finish("blkparse", 3, Vocabulary::Texts);
        let get = |name: &str| out.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        assert_eq!(strings(&out, "action"), vec![Some("UT".into()); 2]);
        assert_eq!(
            strings(&out, "op"),
            vec![Some("W".into()); 2],
            "single letters"
        );
        assert_eq!(strings(&out, "rwbs"), vec![Some("WS".into()); 2]);
        assert_eq!(strings(&out, "op"), vec![Some("W".into()); 2]);
        assert_eq!(strings(&out, "comm"), vec![Some("dd".into()), None]);
        assert_eq!(get("split_sector").null_count(), 2);
        assert_eq!(get("sector").null_count(), 0);
        assert_eq!(cols_end, 1024 + 8, "sector + nsectors");
        let sync = get("sync");
        assert!(sync
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap()
            .value(1));
        assert_eq!(strings(&out, "source"), vec![Some("blkparse".into()); 2]);
        let ids = get("input_id");
        assert_eq!(
            ids.as_any().downcast_ref::<Int16Array>().unwrap().value(1),
            3
        );
    }

    #[test]
    fn codes_stand_for_the_texts() {
        let mut rows = Vec::new();
        for (k, action) in [Action::Queue, Action::UnplugTimer, Action::Complete]
            .into_iter()
            .enumerate()
        {
            let rwbs = Rwbs {
                readahead: k == 1,
                ..Rwbs::plain(if k == 2 { Op::Read } else { Op::Write })
            };
            rows.push(Event {
                action,
                rwbs,
                ..event(k as i64, Some("fio"))
            });
        }
        let finished = |vocabulary| {
            let mut cols = EventColumns::with_capacity(1, 0);
            rows.iter().for_each(|e| cols.push(e));
            cols.finish("blkparse", 0, vocabulary)
        };
        let (texts, codes) = (finished(Vocabulary::Texts), finished(Vocabulary::Codes));
        assert_eq!(
            strings(&texts, "action"),
            ["Q", "UT", "C"].map(|s| Some(s.into()))
        );
        assert_eq!(
            strings(&texts, "rwbs"),
            ["W", "WA", "R"].map(|s| Some(s.into()))
        );
        for ((name, text), (_, code)) in texts.iter().zip(&codes) {
            if !["action", "rwbs", "op"].contains(name) {
                assert_eq!(text.to_data(), code.to_data(), "{name}");
                continue;
            }
            let code = code
                .as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>()
                .unwrap();
            let values = code
                .values()
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            let decoded: Vec<Option<String>> = code
                .keys()
                .iter()
                .map(|k| k.map(|k| values.value(k as usize).into()))
                .collect();
            assert_eq!(decoded, strings(&texts, name), "{name}");
        }
    }

    #[test]
    fn columns_grow_past_the_room_made() {
        let mut cols = EventColumns::with_capacity(1, 0);
        for k in 0..100 {
            cols.push(&event(k, if k % 3 == 0 { None } else { Some("fio") }));
        }
        let out = cols.finish("blkparse", 0, Vocabulary::Texts);
        let get = |name: &str| out.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        let line_no = get("line_no");
        let line_no = line_no.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(line_no.values().to_vec(), (0..100).collect::<Vec<i64>>());
        let comm = strings(&out, "comm");
        assert_eq!(
            (comm[0].clone(), comm[1].clone()),
            (None, Some("fio".into()))
        );
        assert_eq!(comm.iter().filter(|c| c.is_none()).count(), 34);
    }

    #[test]
    fn a_column_with_a_value_on_every_row_has_no_validity() {
        let present = [
            Present::Comm as u8 | Present::Depth as u8,
            Present::Comm as u8,
        ];
        let [sector, _, _, _, comm, depth] = Present::validities(&present);
        assert!(comm.is_none());
        assert_eq!(depth.unwrap().iter().collect::<Vec<_>>(), vec![true, false]);
        assert_eq!(sector.unwrap().null_count(), 2);
    }

    #[test]
    fn bit_planes_set_a_bit_per_row_for_each_mask() {
        let masks = [1, 2, 4, 8, 16, 32, 64, 128, 3];
        // every length around a word's 64 rows, with bytes that mix the masks' bits
        for rows in [0, 1, 63, 64, 65, 127, 128, 200] {
            let bytes: Vec<u8> = (0..rows).map(|k| (k * 37 + k / 3) as u8).collect();
            let planes = bit_planes(&bytes, masks);
            for (bits, mask) in planes.iter().zip(masks) {
                assert_eq!(bits.len(), rows);
                let want: Vec<bool> = bytes.iter().map(|&b| b & mask == mask).collect();
                assert_eq!(bits.iter().collect::<Vec<_>>(), want, "mask {mask}");
                // bits past the last row stay clear (readers may count whole words)
                let words = bits.inner().typed_data::<u64>();
                let ones: u32 = words.iter().map(|w| w.count_ones()).sum();
                assert_eq!(ones as usize, want.iter().filter(|&&b| b).count());
            }
        }
    }

    #[test]
    fn constant_strings_of_no_rows() {
        assert_eq!(constant_strings("x", 0).len(), 0);
    }

    #[test]
    fn constant_strings_hold_the_value_on_every_row() {
        for (value, rows) in [("blkparse", 1), ("blkparse", 5), ("ab", 1000), ("", 3)] {
            let array = constant_strings(value, rows);
            let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
            assert_eq!(strings.len(), rows);
            assert!(strings.iter().all(|s| s == Some(value)), "{value} x {rows}");
            assert_eq!(strings.value_data().len(), value.len() * rows);
        }
    }
}
