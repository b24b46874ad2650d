//! The statistics' compiled steps as Python drives them (`blkscope.analyze.compiled`): Arrow
//! record batches in (DuckDB's query results, streamed), Arrow out, the work done with the GIL
//! released.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Int16Type, Int32Type, Int64Type, UInt8Type};
use arrow_array::{
    Array, ArrayRef, Int32Array, Int64Array, PrimitiveArray, StringArray, StructArray, UInt8Array,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::arrow_io::keys_within;

use super::heatmap::{Completion, Heatmap, TimeBins, STAGES};
use super::iostat::{Completion as IostatCompletion, Completions, Done, Intervals, Op as IostatOp};
use super::islands::{islands, ByDevice, Island, Span, Sweep};
use super::loads::{IssuerKey, IssuerSums, Issuers, LoadBio};
use super::picks::{BucketKey, Hit, Picker, StageTimes, LEVELS};
use super::spikes::{Metric, SpikeWindows};
use crate::arrow_io::{import_batch, split_sum, ArrowBatch};
use crate::pass::UNKNOWN_COMM_NAME;

fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A batch's column `name` of type T.
fn column<'a, T: ArrowPrimitiveType>(
    batch: &'a StructArray,
    name: &str,
) -> Result<&'a PrimitiveArray<T>, String> {
    let array = batch
        .column_by_name(name)
        .ok_or_else(|| format!("expected a column {name}"))?;
    array.as_primitive_opt::<T>().ok_or_else(|| {
        format!(
            "column {name}: expected {}, got {}",
            T::DATA_TYPE,
            array.data_type()
        )
    })
}

/// A batch's column `name` of type T, without nulls: its values.
fn values<'a, T: ArrowPrimitiveType>(
    batch: &'a StructArray,
    name: &str,
) -> Result<&'a [T::Native], String> {
    let array = column::<T>(batch, name)?;
    if array.null_count() > 0 {
        return Err(format!("column {name}: expected no nulls"));
    }
    Ok(array.values().as_ref())
}

/// Row i of a nullable column.
#[inline]
fn at(array: &PrimitiveArray<Int64Type>, i: usize) -> Option<i64> {
    if array.is_null(i) {
        None
    } else {
        Some(array.value(i))
    }
}

/// How the busy periods are found: swept as the spans come, or (a span ends before it starts)
/// by the exact definition over every span sorted.
enum Periods {
    Swept(ByDevice<Sweep>),
    Sorted(ByDevice<Vec<Span>>),
}

/// iostat's busy periods: the requests' [busy_from_ns, c_time_ns] spans in, per device, one
/// batch at a time; `islands()` gives the islands they make.
#[pyclass(module = "blkscope._core")]
pub struct BusyPeriods {
    periods: Option<Periods>,
}

impl BusyPeriods {
    /// Take a batch; Ok(false), with the spans taken so far left unusable, when sweeping meets
    /// a span that ends before it starts.
    fn add(&mut self, batch: &StructArray) -> Result<bool, String> {
        let periods = self
            .periods
            .as_mut()
            .ok_or("islands() was called already")?;
        let major = values::<Int32Type>(batch, "dev_major")?;
        let minor = values::<Int32Type>(batch, "dev_minor")?;
        let from = values::<Int64Type>(batch, "busy_from_ns")?;
        let to = values::<Int64Type>(batch, "c_time_ns")?;
        let spans = (0..batch.len()).map(|i| {
            (
                major[i],
                minor[i],
                Span {
                    from: from[i],
                    to: to[i],
                },
            )
        });
        match periods {
            Periods::Swept(devices) => {
                for (major, minor, span) in spans {
                    if span.to < span.from {
                        return Ok(false);
                    }
                    devices.of(major, minor).take(span);
                }
            }
            Periods::Sorted(devices) => {
                for (major, minor, span) in spans {
                    devices.of(major, minor).push(span);
                }
            }
        }
        Ok(true)
    }
}

#[pymethods]
impl BusyPeriods {
    /// sorted: find the islands by the exact definition over every span sorted (for spans
    /// that end before they start), else sweep them as they come.
    #[new]
    fn new(sorted: bool) -> Self {
        let periods = if sorted {
            Periods::Sorted(ByDevice::default())
        } else {
            Periods::Swept(ByDevice::default())
        };
        BusyPeriods {
            periods: Some(periods),
        }
    }

    /// Take a record batch of requests (dev_major, dev_minor INT32; busy_from_ns, c_time_ns
    /// INT64, no nulls); False when a sweep met a span ending before its start: start again,
    /// sorted.
    fn feed(&mut self, py: Python<'_>, requests: &Bound<'_, PyAny>) -> PyResult<bool> {
        let batch = import_batch(requests)?;
        py.detach(|| self.add(&batch)).map_err(value_error)
    }

    /// The busy periods: (dev_major, dev_minor, lo, hi), one row per island.
    fn islands(&mut self, py: Python<'_>) -> PyResult<ArrowBatch> {
        let periods = self
            .periods
            .take()
            .ok_or_else(|| value_error("islands() was called already"))?;
        let found: Vec<(i32, i32, Vec<Island>)> = py.detach(|| match periods {
            Periods::Swept(by) => by
                .devices
                .into_iter()
                .map(|(ma, mi, sweep)| (ma, mi, sweep.islands()))
                .collect(),
            Periods::Sorted(by) => by
                .devices
                .into_iter()
                .map(|(ma, mi, spans)| (ma, mi, islands(spans)))
                .collect(),
        });
        let (mut major, mut minor, mut lo, mut hi) = (vec![], vec![], vec![], vec![]);
        for (ma, mi, found) in found {
            for island in found {
                major.push(ma);
                minor.push(mi);
                lo.push(island.lo);
                hi.push(island.hi);
            }
        }
        Ok(ArrowBatch::from_columns(vec![
            ("dev_major", Arc::new(Int32Array::from(major)) as ArrayRef),
            ("dev_minor", Arc::new(Int32Array::from(minor))),
            ("lo", Arc::new(Int64Array::from(lo))),
            ("hi", Arc::new(Int64Array::from(hi))),
        ]))
    }
}

/// iostat's `done` sums per device and interval (iostat.rs), from the requests as the pass
/// writes them (requests.parquet's batches, and the held requests last); the requests counted
/// are `_iostat_requests`'.
#[pyclass(module = "blkscope._core")]
pub struct IostatCounts {
    done: Completions,
}

/// Exact sums (None: null) as two columns NAME_hi and NAME_lo, which the SQL adds back as
/// `NAME_hi::HUGEINT * 4294967296 + NAME_lo`.
fn push_exact_sums(
    columns: &mut Vec<(String, ArrayRef)>,
    name: &str,
    sums: impl Iterator<Item = Option<i128>>,
) {
    let parts: Vec<Option<(i64, i64)>> = sums.map(|s| s.map(split_sum)).collect();
    let half = |f: fn((i64, i64)) -> i64| -> ArrayRef {
        Arc::new(parts.iter().map(|p| p.map(f)).collect::<Int64Array>())
    };
    columns.push((format!("{name}_hi"), half(|p| p.0)));
    columns.push((format!("{name}_lo"), half(|p| p.1)));
}

/// One of a `Done`'s sums, None where the SQL's is null.
type SumOf = fn(&Done) -> Option<i128>;

/// `_iostat_requests`' filter: a flush end, or data with a length, that completed.
fn counted(kind: Option<&str>, nsectors: Option<i64>) -> bool {
    match kind {
        Some("flush_end") => true,
        Some("data") => nsectors.is_some_and(|n| n > 0),
        _ => false,
    }
}

fn iostat_op(op: Option<&str>) -> IostatOp {
    match op {
        Some("R") => IostatOp::Read,
        Some("W") => IostatOp::Write,
        _ => IostatOp::Other,
    }
}

impl IostatCounts {
    fn add(&mut self, batch: &StructArray) -> Result<(), String> {
        let major = values::<Int32Type>(batch, "dev_major")?;
        let minor = values::<Int32Type>(batch, "dev_minor")?;
        let kind = Strings::of(batch, "kind")?;
        let op = Strings::of(batch, "op")?;
        let nsectors = column::<Int32Type>(batch, "nsectors")?;
        let times = |name| column::<Int64Type>(batch, name);
        let (acct, q, g, d, c) = (
            times("acct_start_ns")?,
            times("q_time_ns")?,
            times("g_time_ns")?,
            times("first_d_time_ns")?,
            times("c_time_ns")?,
        );
        for row in 0..batch.len() {
            let Some(c_time_ns) = at(c, row) else {
                continue;
            };
            let n = nsectors
                .is_valid(row)
                .then(|| i64::from(nsectors.value(row)));
            if !counted(kind.get(row), n) {
                continue;
            }
            // the await runs from the submitter's plug clock, else from the request's own
            // first event
            let start_ns = at(acct, row)
                .or(at(q, row))
                .or(at(g, row))
                .or(at(d, row))
                .unwrap_or(c_time_ns);
            self.done.add(&IostatCompletion {
                major: major[row],
                minor: minor[row],
                op: iostat_op(op.get(row)),
                nsectors: n,
                c_time_ns,
                start_ns,
            })?;
        }
        Ok(())
    }
}

#[pymethods]
impl IostatCounts {
    /// Count into intervals of interval_ns, one starting at origin_ns (the iostat table's).
    #[new]
    fn new(interval_ns: i64, origin_ns: i64) -> PyResult<Self> {
        Ok(IostatCounts {
            done: Completions::new(Intervals::new(interval_ns, origin_ns).map_err(value_error)?),
        })
    }

    /// Take a record batch of requests (dev_major, dev_minor INT32; kind, op strings;
    /// nsectors INT32; acct_start_ns, q_time_ns, g_time_ns, first_d_time_ns, c_time_ns INT64).
    fn feed(&mut self, py: Python<'_>, requests: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = import_batch(requests)?;
        py.detach(|| self.add(&batch)).map_err(value_error)
    }

    /// iostat's `done` rows: (dev_major, dev_minor, k, reads, writes) and each sum as
    /// NAME_hi * 2^32 + NAME_lo (read_sectors, write_sectors, read_wait_ns, write_wait_ns,
    /// wait_ns; the read (write) waits null where the interval has no read (write)).
    fn done(&self) -> ArrowBatch {
        let rows: Vec<_> = self.done.sums.iter().collect();
        let key = |f: fn(&(i32, i32, i64)) -> i64| -> Vec<i64> {
            rows.iter().map(|(k, _)| f(k)).collect()
        };
        let mut columns: Vec<(String, ArrayRef)> = vec![
            (
                "dev_major".to_string(),
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|(k, _)| k.0))) as ArrayRef,
            ),
            (
                "dev_minor".to_string(),
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|(k, _)| k.1))),
            ),
            ("k".to_string(), Arc::new(Int64Array::from(key(|k| k.2)))),
            (
                "reads".to_string(),
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|(_, d)| d.reads),
                )),
            ),
            (
                "writes".to_string(),
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|(_, d)| d.writes),
                )),
            ),
        ];
        let sums: [(&str, SumOf); 5] = [
            ("read_sectors", |d| Some(d.read_sectors)),
            ("write_sectors", |d| Some(d.write_sectors)),
            ("read_wait_ns", |d| (d.reads > 0).then_some(d.read_wait_ns)),
            ("write_wait_ns", |d| {
                (d.writes > 0).then_some(d.write_wait_ns)
            }),
            ("wait_ns", |d| Some(d.wait_ns)),
        ];
        for (name, sum) in sums {
            push_exact_sums(&mut columns, name, rows.iter().map(|(_, d)| sum(d)));
        }
        ArrowBatch::from_columns(
            columns
                .iter()
                .map(|(n, a)| (n.as_str(), a.clone()))
                .collect(),
        )
    }
}

/// stage_stats' exact percentiles: built with the wanted ranks and the groups, fed the bios'
/// latencies one batch at a time; `picks()` gives the latency at each rank.
#[pyclass(module = "blkscope._core")]
pub struct StagePicks {
    picker: Option<Picker>,
}

fn hits_of(batch: &StructArray) -> Result<Vec<Hit>, String> {
    let level = values::<Int32Type>(batch, "level_code")?;
    let id = values::<Int32Type>(batch, "id")?;
    let stage = values::<UInt8Type>(batch, "stage")?;
    let b = values::<Int16Type>(batch, "b")?;
    let offset = values::<Int64Type>(batch, "bucket_offset")?;
    let permille = values::<Int32Type>(batch, "permille")?;
    (0..batch.len())
        .map(|i| {
            let level = u8::try_from(level[i]).map_err(|_| format!("level {}", level[i]))?;
            Ok(Hit {
                key: BucketKey {
                    level,
                    id: id[i],
                    stage: stage[i],
                    b: b[i],
                },
                offset: offset[i],
                permille: permille[i],
            })
        })
        .collect()
}

fn groups_of(batch: &StructArray) -> Result<Vec<(i64, [i32; LEVELS])>, String> {
    let key = values::<Int64Type>(batch, "group_key")?;
    let gid = values::<Int32Type>(batch, "gid")?;
    let cid = values::<Int32Type>(batch, "cid")?;
    let oid = values::<Int32Type>(batch, "oid")?;
    let did = values::<Int32Type>(batch, "did")?;
    Ok((0..batch.len())
        .map(|i| (key[i], [gid[i], cid[i], oid[i], did[i]]))
        .collect())
}

/// The gap columns, in scope order (1 process, 2 class, 3 op, 4 device).
const GAPS: [&str; LEVELS] = ["process_ns", "class_ns", "op_ns", "device_ns"];

impl StagePicks {
    fn add(&mut self, batch: &StructArray) -> Result<(), String> {
        let picker = self.picker.as_mut().ok_or("picks() was called already")?;
        let key = values::<Int64Type>(batch, "group_key")?;
        let times = |name| column::<Int64Type>(batch, name);
        let (g, i, d, m) = (
            times("g_time_ns")?,
            times("i_time_ns")?,
            times("d_time_ns")?,
            times("m_time_ns")?,
        );
        let (q, d2c, q2c) = (times("q_time_ns")?, times("d2c_ns")?, times("q2c_ns")?);
        let merged = batch
            .column_by_name("merged")
            .ok_or("expected a column merged")?
            .as_boolean_opt()
            .ok_or("column merged: expected BOOLEAN")?;
        let gaps = GAPS
            .iter()
            .map(|name| column::<Int64Type>(batch, name))
            .collect::<Result<Vec<_>, _>>()?;
        for (row, &k) in key.iter().enumerate() {
            let stage_times = StageTimes {
                g_time_ns: at(g, row),
                i_time_ns: at(i, row),
                d_time_ns: at(d, row),
                m_time_ns: at(m, row),
                merged: merged.is_valid(row).then(|| merged.value(row)),
                q_time_ns: at(q, row),
                d2c_ns: at(d2c, row),
                q2c_ns: at(q2c, row),
            };
            let gap = |s: usize| at(gaps[s], row);
            picker.add_bio(k, &stage_times, [gap(0), gap(1), gap(2), gap(3)]);
        }
        Ok(())
    }
}

/// Strings met, as small ids in the order first met.
#[derive(Default)]
struct Names {
    ids: std::collections::HashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    /// A batch's string column as ids (None for a null): a dictionary's codes each looked up
    /// once, not once per row.
    fn column(&mut self, strings: &Strings<'_>, rows: usize) -> Vec<Option<u32>> {
        match strings {
            Strings::Codes(codes, values) => {
                let mut per_code: Vec<Option<u32>> = vec![None; values.len()];
                (0..rows)
                    .map(|i| {
                        codes.is_valid(i).then(|| {
                            let code = codes.value(i) as usize;
                            *per_code[code].get_or_insert_with(|| self.id(values.value(code)))
                        })
                    })
                    .collect()
            }
            other => (0..rows)
                .map(|i| other.get(i).map(|name| self.id(name)))
                .collect(),
        }
    }

    fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// One of an `IssuerSums`' sums.
type IssuerSumOf = fn(&IssuerSums) -> i128;

/// The findings' normal loads per issuer and second (loads.rs), from the bios as the pass
/// writes them.
#[pyclass(module = "blkscope._core")]
pub struct IssuerLoads {
    issuers: Issuers,
    names: Names,
}

impl IssuerLoads {
    fn add(&mut self, batch: &StructArray) -> Result<(), String> {
        let rows = batch.len();
        let major = values::<Int32Type>(batch, "dev_major")?;
        let minor = values::<Int32Type>(batch, "dev_minor")?;
        let pid = values::<Int64Type>(batch, "pid")?;
        let q = values::<Int64Type>(batch, "q_time_ns")?;
        let c = column::<Int64Type>(batch, "c_time_ns")?;
        let sector = column::<Int64Type>(batch, "sector")?;
        let nsectors = column::<Int32Type>(batch, "nsectors")?;
        let comm = self.names.column(&Strings::of(batch, "comm")?, rows);
        let op = self.names.column(&Strings::of(batch, "op")?, rows);
        let flags = self.names.column(&Strings::of(batch, "flags")?, rows);
        for row in 0..rows {
            let Some(c_time_ns) = at(c, row) else {
                continue; // a bio that never completed loads no second
            };
            let (Some(op), Some(flags)) = (op[row], flags[row]) else {
                return Err("bios: a null op or flags".to_string());
            };
            let key = IssuerKey {
                major: major[row],
                minor: minor[row],
                comm: comm[row],
                op,
                flags,
                has_sector: sector.is_valid(row),
                pid: pid[row],
                bin: self.issuers.bin_of(q[row]),
            };
            let bio = LoadBio {
                q_time_ns: q[row],
                c_time_ns,
                nsectors: nsectors
                    .is_valid(row)
                    .then(|| i64::from(nsectors.value(row))),
            };
            self.issuers.add(key, bio)?;
        }
        Ok(())
    }
}

#[pymethods]
impl IssuerLoads {
    /// Bins of bin_ns (evidence.py's NORMAL_BIN_NS).
    #[new]
    fn new(bin_ns: i64) -> PyResult<Self> {
        Ok(IssuerLoads {
            issuers: Issuers::new(bin_ns).map_err(value_error)?,
            names: Names::default(),
        })
    }

    /// Take a record batch of bios (dev_major, dev_minor INT32; comm, op, flags strings;
    /// sector, pid, q_time_ns, c_time_ns INT64; nsectors INT32).
    fn feed(&mut self, py: Python<'_>, bios: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = import_batch(bios)?;
        py.detach(|| self.add(&batch)).map_err(value_error)
    }

    /// A row per issuer and second: (dev_major, dev_minor, comm, op, flags, sector (0, or
    /// null where the bios have none), pid, bin) and byte_ns, io_ns, bytes as NAME_hi * 2^32
    /// + NAME_lo, and ios.
    fn bins(&self) -> ArrowBatch {
        let rows: Vec<_> = self.issuers.sums.iter().collect();
        let name = |id: u32| self.names.name(id);
        let mut columns: Vec<(String, ArrayRef)> = vec![
            (
                "dev_major".into(),
                Arc::new(Int32Array::from_iter_values(
                    rows.iter().map(|(k, _)| k.major),
                )),
            ),
            (
                "dev_minor".into(),
                Arc::new(Int32Array::from_iter_values(
                    rows.iter().map(|(k, _)| k.minor),
                )),
            ),
            (
                "comm".into(),
                Arc::new(
                    rows.iter()
                        .map(|(k, _)| k.comm.map(name))
                        .collect::<StringArray>(),
                ),
            ),
            (
                "op".into(),
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|(k, _)| name(k.op)),
                )),
            ),
            (
                "flags".into(),
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|(k, _)| name(k.flags)),
                )),
            ),
            (
                "sector".into(),
                Arc::new(
                    rows.iter()
                        .map(|(k, _)| k.has_sector.then_some(0))
                        .collect::<Int32Array>(),
                ),
            ),
            (
                "pid".into(),
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|(k, _)| k.pid),
                )),
            ),
            (
                "bin".into(),
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|(k, _)| k.bin),
                )),
            ),
        ];
        let sums: [(&str, IssuerSumOf); 3] = [
            ("byte_ns", |s| s.byte_ns),
            ("io_ns", |s| s.io_ns),
            ("bytes", |s| s.bytes),
        ];
        for (name, sum) in sums {
            push_exact_sums(&mut columns, name, rows.iter().map(|(_, s)| Some(sum(s))));
        }
        columns.push((
            "ios".into(),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|(_, s)| s.ios),
            )),
        ));
        ArrowBatch::from_columns(
            columns
                .iter()
                .map(|(n, a)| (n.as_str(), a.clone()))
                .collect(),
        )
    }
}

#[pymethods]
impl StagePicks {
    /// hits: the wanted ranks (level_code, id INT32; stage UINT8; b INT16; bucket_offset INT64;
    /// permille INT32); groups: every finest group's key (group_key INT64) and ids (gid, cid,
    /// oid, did INT32).
    #[new]
    fn new(py: Python<'_>, hits: &Bound<'_, PyAny>, groups: &Bound<'_, PyAny>) -> PyResult<Self> {
        let hits = import_batch(hits)?;
        let groups = import_batch(groups)?;
        let picker = py
            .detach(|| -> Result<Picker, String> {
                Ok(Picker::new(&hits_of(&hits)?, &groups_of(&groups)?))
            })
            .map_err(value_error)?;
        Ok(StagePicks {
            picker: Some(picker),
        })
    }

    /// Take a record batch of bios (the pass's Q2Q file): group_key, their stage times as
    /// `bios` has them (g_time_ns, i_time_ns, d_time_ns, m_time_ns, q_time_ns, d2c_ns, q2c_ns
    /// INT64; merged BOOLEAN) and their gaps process_ns, class_ns, op_ns, device_ns (INT64,
    /// null for a group's first Q).
    fn feed(&mut self, py: Python<'_>, bios: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = import_batch(bios)?;
        py.detach(|| self.add(&batch)).map_err(value_error)
    }

    /// The latency at each wanted rank: (level_code, id, stage, permille, v).
    fn picks(&mut self, py: Python<'_>) -> PyResult<ArrowBatch> {
        let picker = self
            .picker
            .take()
            .ok_or_else(|| value_error("picks() was called already"))?;
        let picked = py.detach(|| picker.picks()).map_err(value_error)?;
        let level: Vec<i32> = picked.iter().map(|(h, _)| i32::from(h.key.level)).collect();
        let id: Vec<i32> = picked.iter().map(|(h, _)| h.key.id).collect();
        let stage: Vec<u8> = picked.iter().map(|(h, _)| h.key.stage).collect();
        let permille: Vec<i32> = picked.iter().map(|(h, _)| h.permille).collect();
        let v: Vec<i64> = picked.iter().map(|(_, v)| *v).collect();
        Ok(ArrowBatch::from_columns(vec![
            ("level_code", Arc::new(Int32Array::from(level)) as ArrayRef),
            ("id", Arc::new(Int32Array::from(id))),
            ("stage", Arc::new(UInt8Array::from(stage))),
            ("permille", Arc::new(Int32Array::from(permille))),
            ("v", Arc::new(Int64Array::from(v))),
        ]))
    }
}

/// A batch's string column `name`, as Arrow may hand it (utf8, large utf8, string view, or
/// int32 codes into utf8, as the pass's rows give it): row i's string, or None for a null.
enum Strings<'a> {
    Utf8(&'a arrow_array::StringArray),
    Codes(&'a Int32Array, &'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
}

impl<'a> Strings<'a> {
    fn of(batch: &'a StructArray, name: &str) -> Result<Strings<'a>, String> {
        let array = batch
            .column_by_name(name)
            .ok_or_else(|| format!("expected a column {name}"))?;
        if let Some(a) = array.as_string_opt::<i32>() {
            Ok(Strings::Utf8(a))
        } else if let Some(a) = array.as_string_opt::<i64>() {
            Ok(Strings::Large(a))
        } else if let Some(a) = array.as_string_view_opt() {
            Ok(Strings::View(a))
        } else if let Some(codes) = array.as_dictionary_opt::<Int32Type>() {
            let values = codes.values().as_string_opt::<i32>().ok_or_else(|| {
                format!("column {name}: expected strings, got {}", array.data_type())
            })?;
            // a code outside the names would panic when read: refused here instead
            if !keys_within(codes.keys(), values.len()) {
                return Err(format!("column {name}: a code outside its names"));
            }
            Ok(Strings::Codes(codes.keys(), values))
        } else {
            Err(format!(
                "column {name}: expected a string, got {}",
                array.data_type()
            ))
        }
    }

    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Strings::Utf8(a) => a.is_valid(i).then(|| a.value(i)),
            Strings::Codes(codes, names) => codes
                .is_valid(i)
                .then(|| names.value(codes.value(i) as usize)),
            Strings::Large(a) => a.is_valid(i).then(|| a.value(i)),
            Strings::View(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

/// latency_heatmap's cells: the completing bios in, one batch at a time; `cells()` gives a row
/// per cell.
#[pyclass(module = "blkscope._core")]
pub struct HeatmapCells {
    bins: TimeBins,
    map: Option<Heatmap>,
    /// The observer's process names (`is_observer`).
    observers: Observers,
}

/// The capture's own process names, asked of every bio's comm: a comm whose first byte starts
/// none of them (most: kworker, fio, jbd2) is told apart without a string compare.
struct Observers {
    names: Vec<String>,
    first_bytes: [bool; 256],
}

impl Observers {
    fn new(names: Vec<String>) -> Observers {
        let mut first_bytes = [false; 256];
        for name in &names {
            if let Some(&b) = name.as_bytes().first() {
                first_bytes[usize::from(b)] = true;
            }
        }
        Observers { names, first_bytes }
    }

    fn contains(&self, comm: &str) -> bool {
        comm.as_bytes()
            .first()
            .is_some_and(|&b| self.first_bytes[usize::from(b)])
            && self.names.iter().any(|n| n == comm)
    }
}

impl HeatmapCells {
    fn add(&mut self, batch: &StructArray) -> Result<(), String> {
        let map = self.map.as_mut().ok_or("cells() was called already")?;
        let major = values::<Int32Type>(batch, "dev_major")?;
        let minor = values::<Int32Type>(batch, "dev_minor")?;
        let c_time = column::<Int64Type>(batch, "c_time_ns")?;
        let stages = [
            column::<Int64Type>(batch, "d2c_ns")?,
            column::<Int64Type>(batch, "q2c_ns")?,
        ];
        let comm = Strings::of(batch, "comm")?;
        for row in 0..batch.len() {
            let Some(c_time_ns) = at(c_time, row) else {
                continue; // a bio that never completed is in no cell
            };
            let Some(bin) = self.bins.bin(major[row], minor[row], c_time_ns)? else {
                continue;
            };
            // a bio without a comm is process '?', as everywhere (coalesce(comm, '?')), and
            // no observer's
            let known = comm.get(row);
            let completion = Completion {
                dev_major: major[row],
                dev_minor: minor[row],
                bin,
                c_time_ns,
                comm: known.unwrap_or(UNKNOWN_COMM_NAME),
                observer: known.is_some_and(|c| self.observers.contains(c)),
            };
            for (code, ns) in (0..).zip(&stages) {
                if let Some(ns) = at(ns, row) {
                    map.add(&completion, code, ns);
                }
            }
        }
        Ok(())
    }
}

#[pymethods]
impl HeatmapCells {
    /// bins: each device's time bins (dev_major, dev_minor INT32; start_ns, width_ns INT64);
    /// a bio of a device without them counts nowhere. observers: the capture's own process
    /// names (`is_observer`, concepts.OBSERVER_COMMS).
    #[new]
    fn new(py: Python<'_>, bins: &Bound<'_, PyAny>, observers: Vec<String>) -> PyResult<Self> {
        let bins = import_batch(bins)?;
        let bins = py
            .detach(|| -> Result<TimeBins, String> {
                let major = values::<Int32Type>(&bins, "dev_major")?;
                let minor = values::<Int32Type>(&bins, "dev_minor")?;
                let start = values::<Int64Type>(&bins, "start_ns")?;
                let width = values::<Int64Type>(&bins, "width_ns")?;
                TimeBins::new(
                    (0..bins.len())
                        .map(|i| (major[i], minor[i], start[i], width[i]))
                        .collect(),
                )
            })
            .map_err(value_error)?;
        Ok(HeatmapCells {
            bins,
            map: Some(Heatmap::default()),
            observers: Observers::new(observers),
        })
    }

    /// Take a record batch of bios: dev_major, dev_minor INT32; c_time_ns INT64 (null: never
    /// completed, not counted); d2c_ns, q2c_ns INT64 (null: not counted); comm VARCHAR (null:
    /// '?'; an observer's when among the observers).
    fn feed(&mut self, py: Python<'_>, bios: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = import_batch(bios)?;
        py.detach(|| self.add(&batch)).map_err(value_error)
    }

    /// The cells: (dev_major, dev_minor, stage, bin, bucket, n, observer_n, max_ns,
    /// slowest_comm), in no order.
    fn cells(&mut self, py: Python<'_>) -> PyResult<ArrowBatch> {
        let map = self
            .map
            .take()
            .ok_or_else(|| value_error("cells() was called already"))?;
        let rows = py.detach(|| {
            let cells: Vec<_> = map.cells.into_iter().collect();
            let key = |f: fn(&(i32, i32, u8, i64, i32)) -> i64| -> Vec<i64> {
                cells.iter().map(|(k, _)| f(k)).collect()
            };
            let narrow = |v: Vec<i64>| -> Vec<i32> { v.into_iter().map(|x| x as i32).collect() };
            let stage: Vec<&str> = cells
                .iter()
                .map(|(k, _)| STAGES[usize::from(k.2)])
                .collect();
            vec![
                (
                    "dev_major",
                    Arc::new(Int32Array::from(narrow(key(|k| i64::from(k.0))))) as ArrayRef,
                ),
                (
                    "dev_minor",
                    Arc::new(Int32Array::from(narrow(key(|k| i64::from(k.1))))),
                ),
                ("stage", Arc::new(StringArray::from(stage))),
                ("bin", Arc::new(Int64Array::from(key(|k| k.3)))),
                (
                    "bucket",
                    Arc::new(Int32Array::from(narrow(key(|k| i64::from(k.4))))),
                ),
                (
                    "n",
                    Arc::new(Int64Array::from_iter_values(cells.iter().map(|(_, c)| c.n))),
                ),
                (
                    "observer_n",
                    Arc::new(Int64Array::from_iter_values(
                        cells.iter().map(|(_, c)| c.observer_n),
                    )),
                ),
                (
                    "max_ns",
                    Arc::new(Int64Array::from_iter_values(
                        cells.iter().map(|(_, c)| c.slowest.ns),
                    )),
                ),
                (
                    "slowest_comm",
                    Arc::new(StringArray::from_iter_values(
                        cells.iter().map(|(_, c)| c.slowest.comm.as_str()),
                    )),
                ),
            ]
        });
        Ok(ArrowBatch::from_columns(rows))
    }
}

/// The findings' spike windows: the completing bios in (the heatmap's batches), one batch at a
/// time; `windows()` gives a row per window.
#[pyclass(module = "blkscope._core")]
pub struct SpikeWindowRows {
    metric: Metric,
    windows: Option<SpikeWindows>,
}

impl SpikeWindowRows {
    fn add(&mut self, batch: &StructArray) -> Result<(), String> {
        let windows = self
            .windows
            .as_mut()
            .ok_or("windows() was called already")?;
        let major = values::<Int32Type>(batch, "dev_major")?;
        let minor = values::<Int32Type>(batch, "dev_minor")?;
        let c_time = column::<Int64Type>(batch, "c_time_ns")?;
        let latency = column::<Int64Type>(batch, self.metric.column())?;
        let partial = batch
            .column_by_name("partial")
            .ok_or("expected a column partial")?
            .as_boolean_opt()
            .ok_or("column partial: expected BOOLEAN")?;
        for row in 0..batch.len() {
            // complete bios only (SQL's `NOT partial`: a null is not complete either)
            if partial.is_null(row) || partial.value(row) {
                continue;
            }
            if let (Some(c_time_ns), Some(ns)) = (at(c_time, row), at(latency, row)) {
                windows.add(major[row], minor[row], c_time_ns, ns);
            }
        }
        Ok(())
    }
}

#[pymethods]
impl SpikeWindowRows {
    /// Windows of window_ns (> 0) ns from trace zero, judging metric ('q2c' or 'd2c').
    #[new]
    fn new(window_ns: i64, metric: &str) -> PyResult<Self> {
        if window_ns <= 0 {
            return Err(value_error(format!(
                "window must be positive, got {window_ns} ns"
            )));
        }
        let metric = Metric::named(metric)
            .ok_or_else(|| value_error(format!("no such metric: {metric:?}")))?;
        Ok(SpikeWindowRows {
            metric,
            windows: Some(SpikeWindows::new(window_ns)),
        })
    }

    /// Take a record batch of bios: dev_major, dev_minor INT32; c_time_ns INT64 (null: never
    /// completed, not counted); q2c_ns, d2c_ns INT64 (null: not counted); partial BOOLEAN.
    fn feed(&mut self, py: Python<'_>, bios: &Bound<'_, PyAny>) -> PyResult<()> {
        let batch = import_batch(bios)?;
        py.detach(|| self.add(&batch)).map_err(value_error)
    }

    /// The windows: (dev_major, dev_minor, win, ios, p99_ns, max_ns, peak_ns), in that order.
    fn windows(&mut self, py: Python<'_>) -> PyResult<ArrowBatch> {
        let windows = self
            .windows
            .take()
            .ok_or_else(|| value_error("windows() was called already"))?;
        let rows = py.detach(|| windows.rows());
        let ints = |f: fn(&super::spikes::WindowRow) -> i64| -> ArrayRef {
            Arc::new(Int64Array::from_iter_values(rows.iter().map(f)))
        };
        Ok(ArrowBatch::from_columns(vec![
            (
                "dev_major",
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.key.0))) as ArrayRef,
            ),
            (
                "dev_minor",
                Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.key.1))),
            ),
            ("win", ints(|r| r.key.2)),
            ("ios", ints(|r| r.ios)),
            ("p99_ns", ints(|r| r.p99_ns)),
            ("max_ns", ints(|r| r.max_ns)),
            ("peak_ns", ints(|r| r.peak_ns)),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::Observers;

    #[test]
    fn observers_are_exact_names_whatever_their_first_byte() {
        let o = Observers::new(vec!["bpftrace".into(), "iostat".into()]);
        assert!(o.contains("bpftrace") && o.contains("iostat"));
        // the same first byte, another name; a prefix; another first byte; empty
        assert!(!o.contains("biosnoop") && !o.contains("iostat-exporter"));
        assert!(!o.contains("kworker/u8:0") && !o.contains(""));
    }
}
