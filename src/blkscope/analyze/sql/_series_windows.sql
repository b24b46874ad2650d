INCLUDE IF EXISTS series;

-- Per user series (e.g. an application latency probe) and window: samples and their p99,
-- values converted to ns when the series names a time unit.
CREATE MACRO internal._series_windows(
    window_ns  -- the windows' width, ns (on the trace timeline, t_ns, from trace zero)
) RETURNS TABLE(
    series VARCHAR,  -- the series' name
    win BIGINT,      -- window number from trace zero
    ios BIGINT,      -- samples in the window
    p99_ns BIGINT,   -- their 99th percentile
    max_ns BIGINT,   -- the largest sample
    peak_ns BIGINT   -- when it was taken
) AS TABLE
SELECT
    series,
    t_ns // window_ns AS win,
    count(*) AS ios,
    quantile_disc(v, 0.99)::BIGINT AS p99_ns,
    max(v)::BIGINT AS max_ns,
    arg_max(t_ns, v) AS peak_ns
FROM (
    SELECT series, t_ns, value * CASE unit WHEN 'ns' THEN 1 WHEN 'us' THEN 1e3
                                           WHEN 'ms' THEN 1e6 WHEN 's' THEN 1e9 ELSE 1 END AS v
    FROM series
    WHERE t_ns IS NOT NULL AND t_ns >= 0 AND value IS NOT NULL
)
GROUP BY ALL;
