-- Per device, op class and 1 s window of completion: the p50 and p99 of bio latencies.
-- compare judges changes on these per-window values, because IOs in one burst are not
-- independent samples and per-IO statistics would call every wobble significant.
-- The percentiles are quantile_disc's, by exact_quantiles.
-- needs: _window_bio_latencies
WITH agg AS (
    SELECT g, count(*) AS ios FROM _window_bio_latencies GROUP BY g
), q AS (
    SELECT g, list(v ORDER BY permille) AS q
    FROM exact_quantiles('_window_bio_latencies', [500, 990]) GROUP BY g
)
SELECT
    g.dev_major,                                                   -- device major
    g.dev_minor,                                                   -- device minor
    g.op_class,                                                    -- op_class(): read write discard flush other
    g.stage,                                                       -- D2C or Q2C
    g.win,                                                         -- 1 s window of completion
    ios,                                                           -- bios in the window
    q[1] AS p50_ns,                                                -- median latency in the window
    q[2] AS p99_ns                                                 -- 99th percentile in the window
FROM agg JOIN q USING (g)
