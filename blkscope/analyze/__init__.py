"""IO reconstruction and statistics in DuckDB SQL (analyze/sql/*.sql, one view per file).

Pipeline (`blkscope analyze`, analyze.build.BUILD_ORDER), each step stored as Parquet in the
dataset and registered in its manifest:
  events -> _request_events -> _requests -> requests   D/R/C paired per (device, sector, length)
  events -> _bio_nodes -> _bio_pieces -> _piece_requests   each Q followed through X/G/M/F to a D
  + requests -> bios -> stage_stats, latency_hist, depth, io_dist, iostat
No step needs procedural code: every pairing is a window (LAG/LEAD/running sums) over one
device's events in time order, plus one recursive CTE to carry a Q's id down its splits.
"""
