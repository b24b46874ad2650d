//! The streaming pass: the events, in time order, rebuilt into `requests` (one row per block
//! request's D..C life) and `bios` (one row per Q, followed through splits and merges), with
//! what the statistics need from the same walk: each bio's Q2Q gaps, io_dist's counts and the
//! in-flight depth step functions. `docs/reconstruction.md` says which function holds each
//! rule and which test pins it.

mod arrow_in;
mod bios;
mod depth;
mod event;
mod handover;
mod iodist;
mod landing;
mod pairing;
mod plug;
mod pool;
mod process;
mod python;
mod q2q;
mod rows;
mod slab;
mod stages;
mod state;
mod strings;
mod tally;
#[cfg(test)]
mod testing;

use pyo3::prelude::*;

/// A bio without a comm is process '?' (the statistics' too).
pub(crate) use q2q::UNKNOWN_COMM_NAME;

/// io_dist's log2 bucket of a value, as the pass counts it (Python's tests hold it against the
/// SQL macro `log2_bucket`, its definition).
#[pyfunction]
fn log2_bucket(v: i64) -> i64 {
    iodist::log2_bucket(v)
}

/// The value bucket of a latency, as the pass counts it for `_stage_buckets` (Python's tests
/// hold it against the SQL macro `value_bucket`, its definition).
#[pyfunction]
fn value_bucket(v: i64) -> i64 {
    stages::value_bucket(v)
}

/// Add the pass's classes and functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<python::StreamPass>()?;
    m.add_function(wrap_pyfunction!(log2_bucket, m)?)?;
    m.add_function(wrap_pyfunction!(value_bucket, m)?)?;
    Ok(())
}
