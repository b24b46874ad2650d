INCLUDE bios;

-- The latency of every complete bio, keyed by its device and spike window (the rows
-- _spike_windows aggregates; exact_quantiles groups on g and ranks v).
CREATE MACRO internal._spike_latencies(
    window_ns,  -- the windows' width, ns (windows by completion time, from trace zero)
    metric      -- the judged latency: 'q2c' or 'd2c'
) RETURNS TABLE(
    g STRUCT(dev_major INTEGER, dev_minor INTEGER, win BIGINT),  -- device and window number from trace zero
    v BIGINT,                                                    -- the judged latency, ns
    c_time_ns BIGINT                                             -- its completion
) AS TABLE
SELECT
    {'dev_major': dev_major, 'dev_minor': dev_minor, 'win': c_time_ns // window_ns} AS g,
    lat AS v,
    c_time_ns
FROM (
    SELECT dev_major, dev_minor, c_time_ns,
           CASE metric WHEN 'd2c' THEN d2c_ns ELSE q2c_ns END AS lat
    FROM bios
    WHERE NOT partial AND c_time_ns IS NOT NULL
)
WHERE lat IS NOT NULL;
