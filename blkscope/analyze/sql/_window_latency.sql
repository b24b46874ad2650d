-- Per device, op class and 1 s window of completion: the p50 and p99 of bio latencies.
-- compare judges changes on these per-window values, because IOs in one burst are not
-- independent samples and per-IO statistics would call every wobble significant.
-- needs: bios
SELECT
    dev_major,                                                     -- device major
    dev_minor,                                                     -- device minor
    op_class,                                                      -- op_class(): read write discard flush other
    stage,                                                         -- D2C or Q2C
    c_time_ns // 1000000000                           AS win,      -- 1 s window of completion
    count(*)                                          AS ios,      -- bios in the window
    quantile_disc(lat, 0.5)                           AS p50_ns,   -- median latency in the window
    quantile_disc(lat, 0.99)                          AS p99_ns    -- 99th percentile in the window
FROM (
    SELECT dev_major, dev_minor, op_class(op, flags, sector) AS op_class, c_time_ns,
           'D2C' AS stage, d2c_ns AS lat FROM bios
    WHERE NOT partial AND d2c_ns IS NOT NULL
    UNION ALL
    SELECT dev_major, dev_minor, op_class(op, flags, sector), c_time_ns, 'Q2C', q2c_ns FROM bios
    WHERE NOT partial AND q2c_ns IS NOT NULL
)
GROUP BY ALL
