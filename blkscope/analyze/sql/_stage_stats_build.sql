-- The `stage_stats` table: per stage, count/min/mean/percentiles/max at four levels:
-- device x op class x process, device x op class, device x op, and device ('*' = all).
-- Each level groups the integer-keyed long form (_bio_stages) on its own id; a Q2Q gap is
-- kept only at the level whose scope it was computed at.
-- needs: _bio_group_levels, _bio_stages
WITH s AS (
    SELECT 1 AS level_code, gid AS id, stage, ns FROM _bio_stages WHERE scope IN (0, 1)
    UNION ALL SELECT 2, cid, stage, ns FROM _bio_stages WHERE scope IN (0, 2)
    UNION ALL SELECT 3, oid, stage, ns FROM _bio_stages WHERE scope IN (0, 3)
    UNION ALL SELECT 4, did, stage, ns FROM _bio_stages WHERE scope IN (0, 4)
), agg AS (
    -- one quantile aggregate keeps each group's values once, not once per percentile
    SELECT level_code, id, stage, count(*) AS n, min(ns) AS min_ns, avg(ns) AS mean_ns,
           quantile_disc(ns, [0.5, 0.9, 0.99, 0.999]) AS q, max(ns) AS max_ns
    FROM s GROUP BY level_code, id, stage
)
SELECT
    l.dev_major,                                       -- device major
    l.dev_minor,                                       -- device minor
    l.level,                                           -- process, class, op or device
    l.op_class,                                        -- op class, op, or '*'
    l.process,                                         -- process comm or '*'
    stage_name(a.stage) AS stage, -- stage name
    a.n,                                               -- number of latencies
    a.min_ns,                                          -- minimum
    a.mean_ns,                                         -- mean (float)
    a.q[1] AS p50_ns,                                  -- median (an observed value)
    a.q[2] AS p90_ns,                                  -- 90th percentile
    a.q[3] AS p99_ns,                                  -- 99th percentile
    a.q[4] AS p999_ns,                                 -- 99.9th percentile
    a.max_ns                                           -- maximum
FROM agg a JOIN _bio_group_levels l USING (level_code, id)
ORDER BY dev_major, dev_minor, level, op_class, process, stage
