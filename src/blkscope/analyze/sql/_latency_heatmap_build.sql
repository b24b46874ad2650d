INCLUDE _heatmap_cells;

-- The `latency_heatmap` table: how many bios completed in each time bin (time_bins, at C) with
-- a D2C or Q2C latency in each log-scaled bucket, the picture that shows a latency's modes and
-- outliers over time where percentile lines hide them. Buckets are quarter octaves: each power
-- of two is cut into 4 equal parts (bucket 4e + k holds [(4 + k) 2^(e-2), (5 + k) 2^(e-2)) ns
-- for e >= 2); latencies under 4 ns (negative ones at 0) have a bucket each (bucket = the
-- latency). The compiled cells (analyze/compiled.py: `internal._heatmap_cells`, counted from
-- the bios rows as the pass writes them) count each completed bio once (a bio without a comm
-- as '?') and keep each cell's slowest: the largest
-- latency, the first to complete on a tie, then the greatest name (merged bios tie on both).
-- Integer arithmetic only, so a bucket's edges are exact.
CREATE VIEW internal._latency_heatmap_build(LIKE latency_heatmap) AS
SELECT
    dev_major,
    dev_minor,
    stage,
    bin::INTEGER AS bin,
    bucket,
    -- bucket 4e + k: e = bucket // 4, k = bucket & 3
    CASE WHEN bucket < 4 THEN bucket ELSE (4 + (bucket & 3))::BIGINT << (bucket // 4 - 2) END
        AS lo_ns,
    CASE WHEN bucket < 4 THEN bucket + 1 ELSE (5 + (bucket & 3))::BIGINT << (bucket // 4 - 2) END
        AS hi_ns,
    n,
    observer_n,
    max_ns,
    slowest_comm
FROM internal._heatmap_cells
ORDER BY dev_major, dev_minor, stage, bin, bucket;
