-- The `stage_stats` table: per stage, count/min/mean/percentiles/max at four levels:
-- device x op class x process, device x op class, device x op, and device ('*' = all).
-- Needs _stage_values (each latency once per level it counts at, g = level << 40 | id << 8 |
-- stage) and _bio_group_levels. The percentiles are quantile_disc's, computed by
-- exact_quantiles without holding a group's latencies in memory.
-- needs: _bio_group_levels, _stage_values
WITH agg AS (
    SELECT g, count(*) AS n, min(v) AS min_ns, avg(v) AS mean_ns, max(v) AS max_ns
    FROM _stage_values GROUP BY g
), q AS (
    SELECT g, list(v ORDER BY permille) AS q
    FROM exact_quantiles('_stage_values', [500, 900, 990, 999]) GROUP BY g
), a AS (
    SELECT (g >> 40)::INTEGER AS level_code, ((g >> 8) & 4294967295)::INTEGER AS id,
           (g & 255)::INTEGER AS stage, n, min_ns, mean_ns, q, max_ns
    FROM agg JOIN q USING (g)
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
FROM a JOIN _bio_group_levels l USING (level_code, id)
ORDER BY dev_major, dev_minor, level, op_class, process, stage
