-- The `stage_stats` table: per stage, count/min/mean/percentiles/max at four levels:
-- device x op class x process, device x op class, device x op, and device ('*' = all).
WITH s AS (SELECT * FROM _bio_stages),
levels AS (
    SELECT 'process' AS level, dev_major, dev_minor, op_class, process, stage, ns
    FROM s WHERE scope IS NULL OR scope = 'process'
    UNION ALL
    SELECT 'class', dev_major, dev_minor, op_class, '*', stage, ns
    FROM s WHERE scope IS NULL OR scope = 'class'
    UNION ALL
    SELECT 'op', dev_major, dev_minor, op_base, '*', stage, ns
    FROM s WHERE scope IS NULL OR scope = 'op'
    UNION ALL
    SELECT 'device', dev_major, dev_minor, '*', '*', stage, ns
    FROM s WHERE scope IS NULL OR scope = 'device'
)
SELECT
    dev_major,                                         -- device major
    dev_minor,                                         -- device minor
    level,                                             -- process, class, op or device
    op_class,                                          -- op class, op, or '*'
    process,                                           -- process comm or '*'
    stage,                                             -- Q2G G2I I2D Q2M M2D D2C Q2C Q2Q
    n,                                                 -- number of latencies
    min_ns,                                            -- minimum
    mean_ns,                                           -- mean (float)
    q[1] AS p50_ns,                                    -- median (an observed value)
    q[2] AS p90_ns,                                    -- 90th percentile
    q[3] AS p99_ns,                                    -- 99th percentile
    q[4] AS p999_ns,                                   -- 99.9th percentile
    max_ns                                             -- maximum
FROM (
    -- one quantile aggregate keeps each group's values once, not once per percentile
    SELECT dev_major, dev_minor, level, op_class, process, stage, count(*) AS n,
           min(ns) AS min_ns, avg(ns) AS mean_ns,
           quantile_disc(ns, [0.5, 0.9, 0.99, 0.999]) AS q, max(ns) AS max_ns
    FROM levels
    GROUP BY ALL
)
ORDER BY dev_major, dev_minor, level, op_class, process, stage
