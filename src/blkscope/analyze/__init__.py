"""IO reconstruction (one streaming pass in compiled code) and statistics (DuckDB SQL views).

Pipeline (`blkscope analyze`, analyze.build), each step stored as Parquet in the dataset and
registered in its manifest:
  events -> analyze/stream (rust/src/pass) -> requests, bios   one pass in time order: D/R/C paired per
            (device, sector, length), each Q followed through X/G/M/F to the D of its request
  requests, bios, events -> analyze/sql views -> stage_stats, latency_hist, depth, io_dist, iostat
The pass keeps only what is in flight (per-device tables keyed by sector); the statistics run in
DuckDB under a memory limit, spilling into the dataset's temporary folder.
"""
