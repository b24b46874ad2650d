-- The `depth_bins` table: the step functions of _depth_steps per time bin (time_bins): the
-- highest depth held for any time in the bin and the time-weighted mean over the traced part of
-- the bin. Summed over bins, mean_depth * traced_ns is the `depth` table's sum of depth * held_ns.
-- needs: _depth_steps, time_bins
-- materialize: table depth_bins
WITH seg AS (
    SELECT s.dev_major, s.dev_minor, s.level, s.depth, s.t_ns AS a, s.t_ns + s.held_ns AS b,
           tb.start_ns, tb.width_ns, tb.bins
    FROM _depth_steps s JOIN time_bins tb USING (dev_major, dev_minor)
    WHERE s.held_ns > 0
), split AS (
    -- each held step, once per bin it touches
    SELECT *, unnest(range((a - start_ns) // width_ns,
                           least((b - 1 - start_ns) // width_ns, bins - 1) + 1)) AS bin
    FROM seg
), pieces AS (
    SELECT dev_major, dev_minor, level, depth, bin,
           least(b, start_ns + (bin + 1) * width_ns) - greatest(a, start_ns + bin * width_ns) AS ns
    FROM split
)
SELECT
    dev_major,                                                        -- device major
    dev_minor,                                                        -- device minor
    level,                                                            -- driver (D..C) or queue (Q..C)
    bin::INTEGER AS bin,                                              -- time_bins bin number
    max(depth)::INTEGER AS max_depth,                                 -- highest depth held in the bin
    (sum(depth * ns) / sum(ns))::DOUBLE AS mean_depth,               -- time-weighted mean over the traced part
    sum(ns)::BIGINT AS traced_ns                                      -- traced time in the bin (the last bin ends at the trace end)
FROM pieces
GROUP BY dev_major, dev_minor, level, bin
ORDER BY dev_major, dev_minor, level, bin
