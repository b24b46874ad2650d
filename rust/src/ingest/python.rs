//! The Python face of ingest: functions of `blkscope._core`, each releasing the GIL while it
//! works and handing its rows over as Arrow (crate::arrow_io). Python wraps them in typed modules
//! (ingest/blkparse/text_stream.py, ingest/blktrace/, capture/blkbin.py).

use arrow_array::types::{Int64Type, UInt8Type};
use arrow_array::{ArrayRef, Int64Array, UInt32Array, UInt64Array, UInt8Array};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Arc;

use super::audit::Audit;
use super::blkparse_text::scan_chunk;
use super::blktrace::problem::Problem;
use super::blktrace::record::record_offsets;
use super::blktrace::{FileProblem, Trace};
use super::events::Vocabulary;
use super::ftrace_bin::{index_records, renumbered};
use super::parquet::{ParquetFile, ParquetReader, ReadError, ValueEncoding, WriteError};
use crate::arrow_io::{import_batch, import_primitive, import_schema, ArrowBatch};

create_exception!(
    _core,
    RecordsError,
    PyValueError,
    "A blktrace file is not what it should be: args (kind, file index, message)."
);

fn records_error((file, problem): FileProblem) -> PyErr {
    RecordsError::new_err((problem.kind(), file, problem.message()))
}

/// A chunk of text as Python hands it over: bytes, or a uint8 Arrow array over memory Python
/// holds (a slice of a mapped file), read where it lies without a copy.
enum Text<'a> {
    Bytes(&'a [u8]),
    Mapped(UInt8Array),
}

impl<'a> Text<'a> {
    fn of(obj: &'a Bound<'_, PyAny>) -> PyResult<Text<'a>> {
        if let Ok(bytes) = obj.cast::<PyBytes>() {
            return Ok(Text::Bytes(bytes.as_bytes()));
        }
        Ok(Text::Mapped(import_primitive::<UInt8Type>(obj)?))
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Text::Bytes(bytes) => bytes,
            Text::Mapped(array) => array.values(),
        }
    }
}

/// Scan a chunk of blkparse text (whole lines) whose first line is `first_line`: the events
/// rows of the lines spaced as blkparse prints them, the spans of the other lines (line_no,
/// start, end) for the reference parser, the number of lines, and the largest end of the
/// rows' sector ranges.
#[pyfunction]
fn scan_blkparse_text(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    first_line: i64,
    input_id: i16,
) -> PyResult<(ArrowBatch, ArrowBatch, i64, i64)> {
    let text = Text::of(data)?;
    let bytes = text.bytes();
    Ok(py.detach(|| {
        let scanned = scan_chunk(bytes, first_line);
        let largest_sector_end = scanned.events.largest_sector_end();
        (
            ArrowBatch::from_columns(scanned.events.finish(
                "blkparse",
                input_id,
                Vocabulary::Codes,
            )),
            ArrowBatch::from_columns(scanned.slow.columns()),
            scanned.lines,
            largest_sector_end,
        )
    }))
}

/// How many newlines a chunk of text holds (a SIMD count: the next chunk's first line number
/// is known before this one is scanned).
#[pyfunction]
fn count_newlines(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
    let text = Text::of(data)?;
    let bytes = text.bytes();
    Ok(py.detach(|| memchr::memchr_iter(b'\n', bytes).count()))
}

/// What ingest counts of the events it writes (ingest/audit.rs; ingest/reconcile.py reads it).
#[pyclass(module = "blkscope._core")]
struct EventAudit {
    audit: Audit,
}

#[pymethods]
impl EventAudit {
    /// `per_input`: each input numbers its own events; `unnumbered`: the actions printed
    /// without a number of their own.
    #[new]
    fn new(per_input: bool, unnumbered: Vec<String>) -> Self {
        EventAudit {
            audit: Audit::new(per_input, unnumbered),
        }
    }

    /// Feed a record batch of events in the order they were logged; returns its groups by
    /// (input_id, dev_major, dev_minor, action, plain): events, first_time_ns, last_time_ns.
    fn add(&mut self, py: Python<'_>, events: &Bound<'_, PyAny>) -> PyResult<ArrowBatch> {
        let columns = import_batch(events)?;
        let groups = py
            .detach(|| self.audit.add(&columns))
            .map_err(PyValueError::new_err)?;
        Ok(ArrowBatch::from_columns(groups))
    }

    /// Each CPU stream fed, by key: input_id (-1: one trace), dev_major, dev_minor, cpu,
    /// events, distinct numbers, first_seq, last_seq, steps_back, largest_step_back_ns.
    fn streams(&mut self, py: Python<'_>) -> ArrowBatch {
        ArrowBatch::from_columns(py.detach(|| self.audit.streams()))
    }

    /// (pid, last_plug_ns) per task whose P events were fed: the time of its last P, by pid.
    fn last_plugs(&self) -> ArrowBatch {
        ArrowBatch::from_columns(self.audit.last_plugs())
    }
}

/// A file system error as Python's OSError with its errno (the caller tells a full disk by it),
/// a batch not of the file's schema as ValueError.
fn write_error(e: WriteError) -> PyErr {
    match e {
        WriteError::Io(io) => match io.raw_os_error() {
            // OSError(errno, message): Python picks the subclass and sets errno
            Some(code) => PyOSError::new_err((code, io.to_string())),
            None => PyOSError::new_err(io.to_string()),
        },
        WriteError::Schema(message) => PyValueError::new_err(message),
    }
}

/// A Parquet file written by the core (ingest/parquet/): created at a path for a pyarrow
/// schema, fed record batches of it (one row group each, the GIL released), then closed.
#[pyclass(module = "blkscope._core")]
struct ParquetTableWriter {
    file: ParquetFile,
}

#[pymethods]
impl ParquetTableWriter {
    /// `dictionary`, `delta`: the columns so encoded (the rest PLAIN; a dictionary-typed
    /// column keeps its dictionary); `statistics`: the integer columns given min/max;
    /// `key_values`: the footer's metadata (the serialised Arrow schema among it);
    /// `compress`: LZ4 the pages where that saves a tenth.
    #[new]
    #[pyo3(signature = (path, schema, dictionary, delta, statistics, key_values, compress=true))]
    fn new(
        path: &str,
        schema: &Bound<'_, PyAny>,
        dictionary: Vec<String>,
        delta: Vec<String>,
        statistics: Vec<String>,
        key_values: Vec<(String, Vec<u8>)>,
        compress: bool,
    ) -> PyResult<Self> {
        let schema = import_schema(schema)?;
        let encoding_of = |name: &str| {
            if dictionary.iter().any(|c| c == name) {
                ValueEncoding::Dictionary
            } else if delta.iter().any(|c| c == name) {
                ValueEncoding::Delta
            } else {
                ValueEncoding::Plain
            }
        };
        let statistics_of = |name: &str| statistics.iter().any(|c| c == name);
        let file = ParquetFile::create(
            path,
            &schema,
            encoding_of,
            statistics_of,
            key_values,
            compress,
        )
        .map_err(write_error)?;
        Ok(ParquetTableWriter { file })
    }

    /// Append a record batch (any object exporting a struct array) of the file's schema.
    fn write(&mut self, py: Python<'_>, batch: &Bound<'_, PyAny>) -> PyResult<()> {
        let rows = import_batch(batch)?;
        let file = &mut self.file;
        py.detach(|| file.write(&rows)).map_err(write_error)
    }

    /// Write the footer and flush; a second close does nothing.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let file = &mut self.file;
        py.detach(|| file.close()).map_err(write_error)
    }

    /// Rows written so far.
    #[getter]
    fn rows(&self) -> i64 {
        self.file.rows()
    }
}

/// A Parquet file of the core's writer read a row group at a time (ingest/parquet/read.rs),
/// its strings as dictionaries: ValueError when it is not such a file (read it another way).
#[pyclass(module = "blkscope._core")]
struct ParquetTableReader {
    file: ParquetReader,
}

fn read_error(e: ReadError) -> PyErr {
    match e {
        ReadError::Io(io) => match io.raw_os_error() {
            Some(code) => PyOSError::new_err((code, io.to_string())),
            None => PyOSError::new_err(io.to_string()),
        },
        ReadError::Unsupported(why) => PyValueError::new_err(format!("unsupported: {why}")),
        ReadError::Malformed(why) => PyValueError::new_err(format!("damaged: {why}")),
    }
}

#[pymethods]
impl ParquetTableReader {
    /// `schema`: the columns to read and their Arrow types (integers, booleans,
    /// dictionary<int32, utf8> for strings).
    #[new]
    fn new(path: &str, schema: &Bound<'_, PyAny>) -> PyResult<Self> {
        let schema = import_schema(schema)?;
        let file = ParquetReader::open(path, &schema).map_err(read_error)?;
        Ok(ParquetTableReader { file })
    }

    /// How many row groups the file has.
    #[getter]
    fn row_groups(&self) -> usize {
        self.file.row_groups()
    }

    /// Row group `group`'s columns as a batch (the GIL released while they are decoded).
    fn read(&mut self, py: Python<'_>, group: usize) -> PyResult<ArrowBatch> {
        if group >= self.file.row_groups() {
            return Err(PyValueError::new_err(format!("no row group {group}")));
        }
        let file = &mut self.file;
        let columns = py.detach(|| file.read(group)).map_err(read_error)?;
        Ok(ArrowBatch::from_columns(
            columns
                .iter()
                .map(|(n, a)| (n.as_str(), a.clone()))
                .collect(),
        ))
    }
}

/// Where each record of a per-CPU blktrace file starts (an int64 array); RecordsError when the
/// file is not whole records of blktrace version 7.
#[pyfunction]
fn blktrace_record_offsets(py: Python<'_>, data: &Bound<'_, PyBytes>) -> PyResult<ArrowBatch> {
    let bytes = data.as_bytes();
    let offsets = py
        .detach(|| record_offsets(bytes))
        .map_err(|p: Problem| records_error((0, p)))?;
    let offsets: Vec<i64> = offsets.into_iter().map(|o| o as i64).collect();
    Ok(ArrowBatch::from_columns(vec![(
        "offset",
        Arc::new(Int64Array::from(offsets)) as ArrayRef,
    )]))
}

/// The per-CPU files of one trace, read: rows in blkparse's print order, made a slice at a
/// time, and what the notes said.
#[pyclass(frozen, module = "blkscope._core")]
struct BlktraceTrace {
    files: Vec<Py<PyBytes>>,
    trace: Trace,
    input_id: i16,
}

#[pymethods]
impl BlktraceTrace {
    #[new]
    fn new(py: Python<'_>, files: Vec<Bound<'_, PyBytes>>, input_id: i16) -> PyResult<Self> {
        let slices: Vec<&[u8]> = files.iter().map(|f| f.as_bytes()).collect();
        let trace = py.detach(|| Trace::read(&slices)).map_err(records_error)?;
        Ok(BlktraceTrace {
            files: files.into_iter().map(Bound::unbind).collect(),
            trace,
            input_id,
        })
    }

    /// Rows start..stop of the events table, in print order.
    fn rows(&self, py: Python<'_>, start: usize, stop: usize) -> PyResult<ArrowBatch> {
        let slices: Vec<&[u8]> = self.files.iter().map(|f| f.bind(py).as_bytes()).collect();
        let columns = py
            .detach(|| self.trace.rows(&slices, start, stop, self.input_id))
            .map_err(records_error)?;
        Ok(ArrowBatch::from_columns(columns))
    }

    #[getter]
    fn num_rows(&self) -> usize {
        self.trace.num_rows()
    }

    #[getter]
    fn base_time_ns(&self) -> u64 {
        self.trace.base_time_ns
    }

    #[getter]
    fn smallest_time_ns(&self) -> u64 {
        self.trace.smallest_time_ns
    }

    /// (dev_major, dev_minor, cpu, note time, wall ns) of each timestamp note, in file order.
    #[getter]
    fn wall_notes(&self) -> Vec<(i32, i32, u32, u64, u64)> {
        let notes = &self.trace.wall_notes;
        notes
            .iter()
            .map(|n| (n.dev_major, n.dev_minor, n.cpu, n.time, n.wall_ns))
            .collect()
    }

    #[getter]
    fn other_notes(&self) -> u64 {
        self.trace.other_notes
    }

    #[getter]
    fn messages(&self) -> u64 {
        self.trace.messages
    }

    /// (code, records) of the codes blkparse does not print, by code.
    #[getter]
    fn skipped_by_code(&self) -> Vec<(u8, u64)> {
        self.trace
            .skipped_by_code
            .iter()
            .map(|(&c, &n)| (c, n))
            .collect()
    }

    /// Process names by pid, as the notes' bytes.
    #[getter]
    fn comms<'py>(&self, py: Python<'py>) -> Vec<(u32, Bound<'py, PyBytes>)> {
        let mut comms: Vec<_> = self.trace.comms.iter().collect();
        comms.sort_unstable_by_key(|(&pid, _)| pid);
        comms
            .into_iter()
            .map(|(&pid, name)| (pid, PyBytes::new(py, name)))
            .collect()
    }

    /// How many records each file holds.
    #[getter]
    fn records_per_file(&self) -> Vec<usize> {
        self.trace.records_per_file()
    }
}

/// The whole records of the ftrace blk tracer's binary stream in buf[at:stop]: (end, where a
/// non-record starts or -1, columns start, pdu_len, cpu, device, pid, time).
#[pyfunction]
fn index_ftrace_records(
    py: Python<'_>,
    buf: &Bound<'_, PyBytes>,
    at: usize,
    stop: usize,
) -> (usize, i64, ArrowBatch) {
    let bytes = buf.as_bytes();
    py.detach(|| {
        let found = index_records(bytes, at, stop);
        let bad = found.bad.map_or(-1, |b| b as i64);
        let columns = ArrowBatch::from_columns(vec![
            ("start", Arc::new(Int64Array::from(found.start)) as ArrayRef),
            ("pdu_len", Arc::new(Int64Array::from(found.pdu_len))),
            ("cpu", Arc::new(UInt32Array::from(found.cpu))),
            ("device", Arc::new(UInt32Array::from(found.device))),
            ("pid", Arc::new(UInt32Array::from(found.pid))),
            ("time", Arc::new(UInt64Array::from(found.time))),
        ]);
        (found.end, bad, columns)
    })
}

/// The records at `start` (int64 arrays start, pdu_len, device_index) without ftrace's header,
/// back to back, renumbered per device from `sequences` (each device's last number); returns
/// the bytes and the updated numbers.
#[pyfunction]
fn renumbered_blk_records<'py>(
    py: Python<'py>,
    buf: &Bound<'py, PyBytes>,
    start: &Bound<'py, PyAny>,
    pdu_len: &Bound<'py, PyAny>,
    device_index: &Bound<'py, PyAny>,
    sequences: Vec<i64>,
) -> PyResult<(Bound<'py, PyBytes>, Vec<i64>)> {
    let start = import_primitive::<Int64Type>(start)?;
    let pdu_len = import_primitive::<Int64Type>(pdu_len)?;
    let device_index = import_primitive::<Int64Type>(device_index)?;
    if pdu_len.len() != start.len() || device_index.len() != start.len() {
        return Err(PyValueError::new_err(
            "start, pdu_len and device_index differ in length",
        ));
    }
    let bytes = buf.as_bytes();
    let mut sequences = sequences;
    let out = py.detach(|| {
        renumbered(
            bytes,
            start.values(),
            pdu_len.values(),
            device_index.values(),
            &mut sequences,
        )
    });
    Ok((PyBytes::new(py, &out), sequences))
}

/// Add ingest's functions and classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(scan_blkparse_text, m)?)?;
    m.add_function(wrap_pyfunction!(count_newlines, m)?)?;
    m.add_function(wrap_pyfunction!(blktrace_record_offsets, m)?)?;
    m.add_function(wrap_pyfunction!(index_ftrace_records, m)?)?;
    m.add_function(wrap_pyfunction!(renumbered_blk_records, m)?)?;
    m.add_class::<BlktraceTrace>()?;
    m.add_class::<EventAudit>()?;
    m.add_class::<ParquetTableWriter>()?;
    m.add_class::<ParquetTableReader>()?;
    m.add("RecordsError", m.py().get_type::<RecordsError>())?;
    Ok(())
}
