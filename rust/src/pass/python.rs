//! The pass as Python drives it (`blkscope.analyze.stream.run`): events in, one Arrow batch at
//! a time, rows out as Arrow batches; the work runs with the GIL released, so that Python's
//! threads read and write Parquet meanwhile.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Int16Array, Int32Array, Int64Array, StringArray, UInt8Array,
};
use arrow_schema::ArrowError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::arrow_in::{Batch, Columns, Decoded, COLUMNS};
use super::depth::{Bounds, DepthWalk, LEVELS};
use super::event::{Action, Op};
use super::handover::Handover;
use super::iodist::METRICS;
use super::pool::Pools;
use super::q2q::SCOPES;
use super::rows::{batch, requests_batch, Names, RequestKind};
use super::state::{Device, Pass};
use super::strings::Dictionary;
use super::tally::{OpKey, RequestCounts};
use crate::arrow_io::{import_batch, split_sum, ArrowBatch};
use crate::stats::iostat::{Intervals, Merges, Op as IostatOp};

/// How iostat counts a merge of this op: events.op R and W in their columns.
fn merged_op(op: Op) -> IostatOp {
    match op {
        Op::Read => IostatOp::Read,
        Op::Write => IostatOp::Write,
        _ => IostatOp::Other,
    }
}

fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The index of device major:minor among the pass's devices.
fn device_index(devices: &[Device], major: i64, minor: i64) -> Option<usize> {
    devices
        .iter()
        .position(|d| d.major == major && d.minor == minor)
}

/// The streaming pass over one dataset's events.
#[pyclass(module = "blkscope._core")]
pub struct StreamPass {
    pass: Pass,
    rwbs: Dictionary,
    comm: Dictionary,
    /// The (time, event id) of the last event fed.
    last: Option<(i64, i64)>,
    /// The column buffers of rows handed over, back from Arrow for the next ones.
    pools: Pools,
    /// Each batch's decoded codes (their memory kept for the next batch).
    decoded: Decoded,
    /// The rows written, as columns until Python takes them, and counted (`io_counts`'
    /// source).
    handover: Handover,
    /// iostat's merges per device and interval, once asked for (`count_merges`).
    merges: Option<Merges>,
}

impl StreamPass {
    fn names(&self) -> Names<'_> {
        Names {
            devices: &self.pass.devices,
            rwbs: &self.rwbs,
            comm: &self.comm,
        }
    }

    /// Run a batch: Ok(false), having run nothing, when its events are not in (time, event
    /// id) order after the ones before.
    fn run(&mut self, columns: &arrow_array::StructArray) -> Result<bool, String> {
        let columns = Columns::new(columns)?;
        self.decoded
            .fill(&columns, &mut self.rwbs, &mut self.comm)?;
        let batch = Batch::new(&columns, &self.decoded)?;
        if !batch.ordered_after(self.last) {
            return Ok(false);
        }
        if batch.len > 0 {
            self.last = Some(batch.order(batch.len - 1));
        }
        let mut cached: Option<((i64, i64), usize)> = None;
        for i in 0..batch.len {
            let Some(action) = batch.action(i) else {
                continue; // an action the pass skips (m, S, T, B, ...)
            };
            let device = batch.device(i);
            let dev = match cached {
                Some((d, index)) if d == device => index,
                _ => {
                    let index =
                        device_index(&self.pass.devices, device.0, device.1).ok_or_else(|| {
                            format!(
                                "events hold device {}:{}, which was not listed before the pass",
                                device.0, device.1
                            )
                        })?;
                    cached = Some((device, index));
                    index
                }
            };
            if action.plugs() {
                let (t, _) = batch.order(i);
                self.pass.plug_action(batch.pid(i), action, t);
                continue;
            }
            let ev = batch.event(i, dev, action);
            if let (Some(merges), Action::BackMerge | Action::FrontMerge) =
                (self.merges.as_mut(), action)
            {
                merges.add(dev, merged_op(ev.op), ev.t)?;
            }
            if action == Action::Queue && !self.pass.op_classes.knows(ev.rwbs) {
                return Err(format!(
                    "the op classes of RWBS {:?} were not given before its events",
                    ev.rwbs.map(|c| self.rwbs.value(c))
                ));
            }
            self.pass.event(&ev);
            if Handover::due(&self.pass) {
                self.handover.absorb(&mut self.pass, &self.pools, false);
            }
        }
        self.pass.end_batch()?;
        Ok(true)
    }
}

#[pymethods]
impl StreamPass {
    /// `devices`: (major, minor, dispatches, has bio nodes) per device, in index order;
    /// `bounds`: (major, minor, first event time, last event time, first bin's start, bin
    /// width, bins) per device with events (sql/time_bins.sql); `last_plugs`: (pid, time of
    /// its last P) per task that plugs.
    #[new]
    fn new(
        plug_clock: bool,
        devices: Vec<(i64, i64, bool, bool)>,
        bounds: Vec<(i64, i64, i64, i64, i64, i64, i64)>,
        last_plugs: Vec<(i64, i64)>,
    ) -> PyResult<StreamPass> {
        let devices: Vec<Device> = devices
            .into_iter()
            .map(|(major, minor, dispatches, has_bio_nodes)| Device {
                major,
                minor,
                dispatches,
                has_bio_nodes,
                ..Device::default()
            })
            .collect();
        let mut per_device: Vec<Option<Bounds>> = vec![None; devices.len()];
        for (major, minor, t0, t1, start, width, bins) in bounds {
            let index = devices
                .iter()
                .position(|d| d.major == major && d.minor == minor)
                .ok_or_else(|| {
                    value_error(format!("bounds of an unknown device {major}:{minor}"))
                })?;
            per_device[index] = Some(Bounds {
                t0,
                t1,
                start,
                width: width.max(1),
                bins,
            });
        }
        let depth = DepthWalk::new(&per_device);
        let mut pass = Pass::new(plug_clock, devices, depth);
        pass.last_plugs = Some(last_plugs.into_iter().collect());
        Ok(StreamPass {
            pass,
            rwbs: Dictionary::default(),
            comm: Dictionary::starting_with(&[super::q2q::UNKNOWN_COMM_NAME]),
            last: None,
            pools: Pools::default(),
            decoded: Decoded::default(),
            handover: Handover::default(),
            merges: None,
        })
    }

    /// Count the M and F events per device and iostat interval (interval_ns long, one
    /// starting at origin_ns) from now on: the iostat table's merges (`merge_counts`).
    fn count_merges(&mut self, interval_ns: i64, origin_ns: i64) -> PyResult<()> {
        let intervals = Intervals::new(interval_ns, origin_ns).map_err(value_error)?;
        self.merges = Some(Merges::new(intervals));
        Ok(())
    }

    /// iostat's merges: (dev_major, dev_minor, k, read_merges, write_merges) per device and
    /// interval with an M or F (empty unless `count_merges` was called).
    fn merge_counts(&self) -> ArrowBatch {
        let rows: Vec<_> = self.merges.iter().flat_map(|m| m.counts.iter()).collect();
        let devices = &self.pass.devices;
        let dev = |f: fn(&Device) -> i64| -> Vec<i32> {
            rows.iter()
                .map(|((d, _), _)| f(&devices[*d]) as i32)
                .collect()
        };
        ArrowBatch::from_columns(vec![
            (
                "dev_major",
                Arc::new(Int32Array::from(dev(|d| d.major))) as ArrayRef,
            ),
            ("dev_minor", Arc::new(Int32Array::from(dev(|d| d.minor)))),
            (
                "k",
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|((_, k), _)| *k),
                )),
            ),
            (
                "read_merges",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|(_, c)| c[0]))),
            ),
            (
                "write_merges",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|(_, c)| c[1]))),
            ),
        ])
    }

    /// The op classes of one RWBS (None: a Q without one): (op_class, bio_op_class) names for
    /// each op letter R W D N, with a sector and without (8 pairs).
    fn add_op_classes(&mut self, rwbs: Option<&str>, names: Vec<(String, String)>) -> PyResult<()> {
        let names: [(String, String); 8] = names
            .try_into()
            .map_err(|_| value_error("expected 8 (op_class, bio_op_class) pairs"))?;
        let code = rwbs.map(|s| self.rwbs.code(s));
        self.pass.op_classes.add(code, &names);
        Ok(())
    }

    /// Run a record batch of events (in time order, after the ones before); False, having run
    /// nothing, when they are not in order.
    fn feed(&mut self, py: Python<'_>, events: &Bound<'_, PyAny>) -> PyResult<bool> {
        let columns = import_batch(events)?;
        py.detach(|| self.run(&columns)).map_err(value_error)
    }

    /// The trace ended: write everything still in flight.
    fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.pass.finish()).map_err(value_error)
    }

    /// Rows written and not yet taken (requests + bios).
    fn pending_rows(&self) -> usize {
        self.handover.pending(&self.pass)
    }

    /// The rows written since the last call: (requests, bios, their Q2Q rows), as batches.
    fn take_rows(&mut self, py: Python<'_>) -> PyResult<(ArrowBatch, ArrowBatch, ArrowBatch)> {
        let built = py.detach(|| {
            self.handover
                .take(&mut self.pass, (&self.rwbs, &self.comm), &self.pools)
        });
        let (r, b, q) = built.map_err(value_error)?;
        Ok((ArrowBatch::new(r), ArrowBatch::new(b), ArrowBatch::new(q)))
    }

    /// The requests without D whose kind waits for the orphan verdict, one row each: (row,
    /// dev_major, dev_minor, sector, nsectors, eid of its first event, time_ns of its C, else
    /// of its first D).
    fn orphan_candidates(&self) -> PyResult<ArrowBatch> {
        let held = &self.pass.held;
        let devices = &self.pass.devices;
        let columns = vec![
            (
                "row",
                Arc::new((0..held.len() as i64).collect::<Int64Array>()) as ArrayRef,
            ),
            (
                "dev_major",
                Arc::new(Int32Array::from_iter_values(
                    held.iter().map(|h| devices[h.row.dev].major as i32),
                )),
            ),
            (
                "dev_minor",
                Arc::new(Int32Array::from_iter_values(
                    held.iter().map(|h| devices[h.row.dev].minor as i32),
                )),
            ),
            (
                "sector",
                Arc::new(held.iter().map(|h| h.row.sector).collect::<Int64Array>()),
            ),
            (
                "nsectors",
                Arc::new(
                    held.iter()
                        .map(|h| h.row.nsectors.map(|n| n as i32))
                        .collect::<Int32Array>(),
                ),
            ),
            (
                "eid",
                Arc::new(Int64Array::from_iter_values(held.iter().map(|h| h.eid))),
            ),
            (
                "time_ns",
                Arc::new(held.iter().map(|h| h.fix_t).collect::<Int64Array>()),
            ),
        ];
        Ok(ArrowBatch::new(batch(columns).map_err(value_error)?))
    }

    /// Settle the orphan verdict (`orphans`: rows of `orphan_candidates` that are orphans):
    /// the held requests' rows, and the depth walk's sums (`depth_time`: dev_major,
    /// dev_minor, level, depth, held_ns; `depth_bin_sums`: dev_major, dev_minor, level, bin,
    /// max_depth, depth_ns, traced_ns).
    fn settle(
        &mut self,
        py: Python<'_>,
        orphans: Vec<usize>,
    ) -> PyResult<(ArrowBatch, ArrowBatch, ArrowBatch)> {
        let built = py.detach(|| -> Result<_, ArrowError> {
            let mut rows: Vec<_> = self.pass.held.iter().map(|h| h.row.clone()).collect();
            let mut orphan_eids = Vec::new();
            for &r in &orphans {
                rows[r].kind = RequestKind::Orphan;
                orphan_eids.extend(rows[r].life.c_eid);
            }
            let held = requests_batch(&rows, &self.names(), &self.pools)?;
            self.handover.tally.add_requests(&rows);
            let (times, bins) = self.pass.depth.settle(&orphan_eids);
            let devices = &self.pass.devices;
            let major = |k: usize| devices[k / 2].major as i32;
            let minor = |k: usize| devices[k / 2].minor as i32;
            let level = |k: usize| Some(LEVELS[k % 2]);
            let times = batch(vec![
                (
                    "dev_major",
                    Arc::new(Int32Array::from_iter_values(
                        times.iter().map(|t| major(t.0)),
                    )) as ArrayRef,
                ),
                (
                    "dev_minor",
                    Arc::new(Int32Array::from_iter_values(
                        times.iter().map(|t| minor(t.0)),
                    )),
                ),
                (
                    "level",
                    Arc::new(times.iter().map(|t| level(t.0)).collect::<StringArray>()),
                ),
                (
                    "depth",
                    Arc::new(Int64Array::from_iter_values(times.iter().map(|t| t.1))),
                ),
                (
                    "held_ns",
                    Arc::new(Int64Array::from_iter_values(times.iter().map(|t| t.2))),
                ),
            ])?;
            let bins = batch(vec![
                (
                    "dev_major",
                    Arc::new(Int32Array::from_iter_values(
                        bins.iter().map(|b| major(b.0)),
                    )) as ArrayRef,
                ),
                (
                    "dev_minor",
                    Arc::new(Int32Array::from_iter_values(
                        bins.iter().map(|b| minor(b.0)),
                    )),
                ),
                (
                    "level",
                    Arc::new(bins.iter().map(|b| level(b.0)).collect::<StringArray>()),
                ),
                (
                    "bin",
                    Arc::new(Int64Array::from_iter_values(bins.iter().map(|b| b.1))),
                ),
                (
                    "max_depth",
                    Arc::new(Int64Array::from_iter_values(bins.iter().map(|b| b.2))),
                ),
                (
                    "depth_ns",
                    Arc::new(Int64Array::from_iter_values(bins.iter().map(|b| b.3))),
                ),
                (
                    "traced_ns",
                    Arc::new(Int64Array::from_iter_values(bins.iter().map(|b| b.4))),
                ),
            ])?;
            Ok((held, times, bins))
        });
        let (held, times, bins) = built.map_err(value_error)?;
        Ok((
            ArrowBatch::new(held),
            ArrowBatch::new(times),
            ArrowBatch::new(bins),
        ))
    }

    /// The most requests, bios, pieces and plug sessions the pass held at once: what it keeps
    /// in flight (the tests hold it to the IOs in flight, not the IOs seen).
    fn most_in_flight(&self) -> Vec<(&'static str, usize)> {
        let pass = &self.pass;
        vec![
            ("requests", pass.requests.most_held()),
            ("bios", pass.bios.most_held()),
            ("pieces", pass.pieces.most_held()),
            ("sessions", pass.sessions.most_held()),
        ]
    }

    /// Whether the depth walk met a C whose request had no D (the orphan verdict matters).
    fn undecided(&self) -> bool {
        self.pass.depth.undecided()
    }

    /// io_dist's counts: (dev_major, dev_minor, op, metric, bucket, n, total) per bucket
    /// holding a value.
    fn io_counts(&self) -> PyResult<ArrowBatch> {
        let buckets = self.pass.io.buckets();
        let devices = &self.pass.devices;
        let columns = vec![
            (
                "dev_major",
                Arc::new(Int32Array::from_iter_values(
                    buckets.iter().map(|b| devices[b.0].major as i32),
                )) as ArrayRef,
            ),
            (
                "dev_minor",
                Arc::new(Int32Array::from_iter_values(
                    buckets.iter().map(|b| devices[b.0].minor as i32),
                )),
            ),
            (
                "op",
                Arc::new(
                    buckets
                        .iter()
                        .map(|b| Some(Op::NAMES[b.1]))
                        .collect::<StringArray>(),
                ),
            ),
            (
                "metric",
                Arc::new(
                    buckets
                        .iter()
                        .map(|b| Some(METRICS[b.2]))
                        .collect::<StringArray>(),
                ),
            ),
            (
                "bucket",
                Arc::new(Int32Array::from_iter_values(
                    buckets.iter().map(|b| b.3 as i32),
                )),
            ),
            (
                "n",
                Arc::new(Int64Array::from_iter_values(buckets.iter().map(|b| b.4))),
            ),
            (
                "total",
                Arc::new(Int64Array::from_iter_values(buckets.iter().map(|b| b.5))),
            ),
        ];
        Ok(ArrowBatch::new(batch(columns).map_err(value_error)?))
    }

    /// The rows written, counted (tally.rs): the bios' (dev_major, dev_minor, op, flags,
    /// has_sector, bios, merged, split, splits, partial) and the requests' (dev_major,
    /// dev_minor, op, flags, has_sector, kind, requests, dispatches, completions, requeues,
    /// partial), one row per key.
    fn row_counts(&self) -> PyResult<(ArrowBatch, ArrowBatch)> {
        let devices = &self.pass.devices;
        let key_columns = |keys: &[OpKey]| -> Vec<(&'static str, ArrayRef)> {
            vec![
                (
                    "dev_major",
                    Arc::new(Int32Array::from_iter_values(
                        keys.iter().map(|k| devices[k.dev].major as i32),
                    )) as ArrayRef,
                ),
                (
                    "dev_minor",
                    Arc::new(Int32Array::from_iter_values(
                        keys.iter().map(|k| devices[k.dev].minor as i32),
                    )),
                ),
                (
                    "op",
                    Arc::new(
                        keys.iter()
                            .map(|k| Some(k.op.name()))
                            .collect::<StringArray>(),
                    ),
                ),
                (
                    "flags",
                    Arc::new(
                        keys.iter()
                            .map(|k| k.rwbs.map(|c| self.rwbs.value(c)))
                            .collect::<StringArray>(),
                    ),
                ),
                (
                    "has_sector",
                    Arc::new(
                        keys.iter()
                            .map(|k| Some(k.has_sector))
                            .collect::<BooleanArray>(),
                    ),
                ),
            ]
        };
        let int64 = |values: Vec<i64>| Arc::new(Int64Array::from(values)) as ArrayRef;
        let bios = self.handover.tally.bios();
        let keys: Vec<OpKey> = bios.iter().map(|(k, _)| *k).collect();
        let mut columns = key_columns(&keys);
        columns.extend([
            ("bios", int64(bios.iter().map(|b| b.1.bios).collect())),
            ("merged", int64(bios.iter().map(|b| b.1.merged).collect())),
            ("split", int64(bios.iter().map(|b| b.1.split).collect())),
            ("splits", int64(bios.iter().map(|b| b.1.splits).collect())),
            ("partial", int64(bios.iter().map(|b| b.1.partial).collect())),
        ]);
        let bios = batch(columns).map_err(value_error)?;
        let requests = self.handover.tally.requests();
        let keys: Vec<OpKey> = requests.iter().map(|(k, _, _)| *k).collect();
        let mut columns = key_columns(&keys);
        let count =
            |f: fn(&RequestCounts) -> i64| int64(requests.iter().map(|r| f(&r.2)).collect());
        columns.extend([
            (
                "kind",
                Arc::new(
                    requests
                        .iter()
                        .map(|r| Some(r.1.name()))
                        .collect::<StringArray>(),
                ) as ArrayRef,
            ),
            ("requests", count(|c| c.requests)),
            ("dispatches", count(|c| c.dispatches)),
            ("completions", count(|c| c.completions)),
            ("requeues", count(|c| c.requeues)),
            ("partial", count(|c| c.partial)),
        ]);
        let requests = batch(columns).map_err(value_error)?;
        Ok((ArrowBatch::new(bios), ArrowBatch::new(requests)))
    }

    /// The counts `_stage_buckets` starts from (stages.rs): per (group_key, scope, stage, value
    /// bucket b) the count c, the smallest lo and largest hi latency and their sum (total_hi *
    /// 2^32 + total_lo: exact beyond BIGINT).
    fn stage_counts(&self) -> PyResult<ArrowBatch> {
        let buckets: Vec<_> = self.pass.stage_counts.buckets().collect();
        let columns = vec![
            (
                "group_key",
                Arc::new(Int64Array::from_iter_values(
                    buckets.iter().map(|(k, _)| k.0),
                )) as ArrayRef,
            ),
            (
                "scope",
                Arc::new(UInt8Array::from_iter_values(
                    buckets.iter().map(|(k, _)| k.1),
                )),
            ),
            (
                "stage",
                Arc::new(UInt8Array::from_iter_values(
                    buckets.iter().map(|(k, _)| k.2),
                )),
            ),
            (
                "b",
                Arc::new(Int16Array::from_iter_values(
                    buckets.iter().map(|(k, _)| k.3),
                )),
            ),
            (
                "c",
                Arc::new(Int64Array::from_iter_values(
                    buckets.iter().map(|(_, b)| b.count),
                )),
            ),
            (
                "lo",
                Arc::new(Int64Array::from_iter_values(
                    buckets.iter().map(|(_, b)| b.lo),
                )),
            ),
            (
                "hi",
                Arc::new(Int64Array::from_iter_values(
                    buckets.iter().map(|(_, b)| b.hi),
                )),
            ),
            (
                "total_hi",
                Arc::new(Int64Array::from_iter_values(
                    buckets.iter().map(|(_, b)| split_sum(b.total).0),
                )),
            ),
            (
                "total_lo",
                Arc::new(Int64Array::from_iter_values(
                    buckets.iter().map(|(_, b)| split_sum(b.total).1),
                )),
            ),
        ];
        Ok(ArrowBatch::new(batch(columns).map_err(value_error)?))
    }

    /// The Q2Q scopes, in the order of the gap columns.
    #[staticmethod]
    fn scopes() -> Vec<&'static str> {
        SCOPES.to_vec()
    }

    /// The columns of `events` the pass reads.
    #[staticmethod]
    fn columns() -> Vec<&'static str> {
        COLUMNS.to_vec()
    }
}
