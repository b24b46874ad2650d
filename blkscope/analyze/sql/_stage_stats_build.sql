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
    count(*) AS n,                                     -- number of latencies
    min(ns) AS min_ns,                                 -- minimum
    avg(ns) AS mean_ns,                                -- mean (float)
    quantile_disc(ns, 0.5) AS p50_ns,                  -- median (an observed value)
    quantile_disc(ns, 0.9) AS p90_ns,                  -- 90th percentile
    quantile_disc(ns, 0.99) AS p99_ns,                 -- 99th percentile
    quantile_disc(ns, 0.999) AS p999_ns,               -- 99.9th percentile
    max(ns) AS max_ns                                  -- maximum
FROM levels
GROUP BY ALL
ORDER BY dev_major, dev_minor, level, op_class, process, stage
