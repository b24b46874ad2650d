-- The `stage_stats` table: per stage, count/min/mean/percentiles/max at four levels:
-- device x op class x process, device x op class, device x op, and device ('*' = all).
-- One aggregate with four grouping sets reads each latency once (a UNION ALL of the four
-- levels copied every row four times). Q2Q rows carry the level their gap was computed at
-- (scope) in the key and are kept only at that level.
WITH agg AS (
    -- one quantile aggregate keeps each group's values once, not once per percentile
    SELECT dev_major, dev_minor, op_base, op_class, process, scope, stage,
           GROUPING(op_base, op_class, process) AS unused, count(*) AS n,
           min(ns) AS min_ns, avg(ns) AS mean_ns,
           quantile_disc(ns, [0.5, 0.9, 0.99, 0.999]) AS q, max(ns) AS max_ns
    FROM _bio_stages
    GROUP BY GROUPING SETS (
        (dev_major, dev_minor, op_class, process, scope, stage),
        (dev_major, dev_minor, op_class, scope, stage),
        (dev_major, dev_minor, op_base, scope, stage),
        (dev_major, dev_minor, scope, stage))
), leveled AS (
    -- GROUPING() sets a bit per column left out: 4 op_base, 2 op_class, 1 process
    SELECT *, CASE unused WHEN 4 THEN 'process' WHEN 5 THEN 'class' WHEN 3 THEN 'op'
                          ELSE 'device' END AS level
    FROM agg
)
SELECT
    dev_major,                                         -- device major
    dev_minor,                                         -- device minor
    level,                                             -- process, class, op or device
    CASE level WHEN 'op' THEN op_base WHEN 'device' THEN '*'
               ELSE op_class END AS op_class,          -- op class, op, or '*'
    CASE level WHEN 'process' THEN process
               ELSE '*' END AS process,                -- process comm or '*'
    stage,                                             -- Q2G G2I I2D Q2M M2D D2C Q2C Q2Q
    n,                                                 -- number of latencies
    min_ns,                                            -- minimum
    mean_ns,                                           -- mean (float)
    q[1] AS p50_ns,                                    -- median (an observed value)
    q[2] AS p90_ns,                                    -- 90th percentile
    q[3] AS p99_ns,                                    -- 99th percentile
    q[4] AS p999_ns,                                   -- 99.9th percentile
    max_ns                                             -- maximum
FROM leveled
WHERE scope IS NULL OR scope = level
ORDER BY dev_major, dev_minor, level, op_class, process, stage
