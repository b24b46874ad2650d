INCLUDE _depth_bin_sums;

-- The `depth_bins` table: the step functions of the `depth` table per time bin (time_bins):
-- the highest depth held for any time in the bin and the time-weighted mean over the traced
-- part of the bin (the last bin ends at the trace end). Summed over bins, mean_depth *
-- traced_ns is the `depth` table's sum of depth * held_ns. The streaming pass cuts each held
-- depth at the bin edges as it walks (rust/src/pass/depth.rs) and leaves per bin the highest
-- depth, the sum of depth * ns and the ns held in the analysis connection's _depth_bin_sums
-- (rows of one bin are summed here): this view exists only while `analyze` runs.
CREATE VIEW internal._depth_bins_build(LIKE depth_bins) AS
SELECT
    dev_major,
    dev_minor,
    level,
    bin::INTEGER AS bin,
    max(max_depth)::INTEGER AS max_depth,
    (sum(depth_ns) / sum(traced_ns))::DOUBLE AS mean_depth,
    sum(traced_ns)::BIGINT AS traced_ns
FROM internal._depth_bin_sums
GROUP BY dev_major, dev_minor, level, bin
ORDER BY dev_major, dev_minor, level, bin;
