//! Ingest: blkparse text and blktrace binaries in, events rows out (Arrow).

mod action;
mod audit;
mod blkparse_text;
mod blktrace;
mod events;
mod ftrace_bin;
mod parquet;
mod python;
mod recycle;
mod rwbs;

pub use python::register;
