INCLUDE _window_bio_latencies, exact_quantiles;

-- Per device, op class and 1 s window of completion: the p50 and p99 of bio latencies.
-- compare judges changes on these per-window values, because IOs in one burst are not
-- independent samples and per-IO statistics would call every wobble significant.
-- The percentiles are quantile_disc's, by exact_quantiles.
CREATE VIEW internal._window_latency(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    op_class VARCHAR,   -- op_class(): read write discard flush other
    stage VARCHAR,      -- D2C or Q2C
    win BIGINT,         -- 1 s window of completion
    ios BIGINT,         -- bios in the window
    p50_ns BIGINT,      -- median latency in the window
    p99_ns BIGINT       -- 99th percentile in the window
) AS
WITH agg AS (
    SELECT g, count(*) AS ios FROM internal._window_bio_latencies GROUP BY g
), q AS (
    SELECT g, list(v ORDER BY permille) AS q
    FROM exact_quantiles('internal._window_bio_latencies', [500, 990]) GROUP BY g
)
SELECT
    g.dev_major,
    g.dev_minor,
    g.op_class,
    g.stage,
    g.win,
    ios,
    q[1] AS p50_ns,
    q[2] AS p99_ns
FROM agg JOIN q USING (g);
