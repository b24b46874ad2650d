//! The statistics' compiled steps: what DuckDB did by sorting or unrolling every request or
//! bio, done in one look at each: iostat's busy periods (`islands`) and counts (`iostat`), stage_stats' exact
//! percentiles (`picks`, over the value buckets of `buckets`), latency_heatmap's cells
//! (`heatmap`) and the findings' spike windows (`spikes`, read with the cells). The SQL modules read their rows (sql/_iostat_build.sql,
//! sql/_stage_stats_build.sql, sql/_latency_heatmap_build.sql); Python drives them
//! (src/blkscope/analyze/compiled.py).

mod hash;
mod heatmap;
pub mod iostat;
mod islands;
mod loads;
mod picks;
mod python;
mod spikes;

use pyo3::prelude::*;

/// Add the statistics' classes to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<python::BusyPeriods>()?;
    m.add_class::<python::IostatCounts>()?;
    m.add_class::<python::IssuerLoads>()?;
    m.add_class::<python::StagePicks>()?;
    m.add_class::<python::HeatmapCells>()?;
    m.add_class::<python::SpikeWindowRows>()?;
    Ok(())
}
