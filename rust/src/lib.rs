//! blkscope's compiled core, imported from Python as `blkscope._core`.

use pyo3::prelude::*;

mod arrow_io;
mod buckets;
mod hash;
mod ingest;
mod pass;
mod stats;

/// The crate's version: the Python package checks it matches its own.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_class::<arrow_io::ArrowBatch>()?;
    pass::register(m)?;
    ingest::register(m)?;
    stats::register(m)?;
    Ok(())
}
