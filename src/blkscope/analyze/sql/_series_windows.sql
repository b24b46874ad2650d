-- Per user series (e.g. an application latency probe) and window: samples and their p99,
-- values converted to ns when the series names a time unit. Windows are
-- getvariable('blkscope_spike_window_ns') wide on the trace timeline (t_ns).
-- needs: series?
SELECT
    series,                                                        -- the series' name
    t_ns // getvariable('blkscope_spike_window_ns') AS win,        -- window number from trace zero
    count(*)                                        AS ios,        -- samples in the window
    quantile_disc(v, 0.99)::BIGINT                  AS p99_ns,     -- their 99th percentile
    max(v)::BIGINT                                  AS max_ns,     -- the largest sample
    arg_max(t_ns, v)                                AS peak_ns     -- when it was taken
FROM (
    SELECT series, t_ns, value * CASE unit WHEN 'ns' THEN 1 WHEN 'us' THEN 1e3
                                           WHEN 'ms' THEN 1e6 WHEN 's' THEN 1e9 ELSE 1 END AS v
    FROM series
    WHERE t_ns IS NOT NULL AND t_ns >= 0 AND value IS NOT NULL
)
GROUP BY ALL
