-- Per device and window: how many bios completed and their latency percentiles.
-- Windows are getvariable('blkscope_spike_window_ns') wide, by completion time;
-- the judged latency is getvariable('blkscope_spike_metric'): 'q2c' or 'd2c'.
-- needs: bios
SELECT
    dev_major,                                            -- device major
    dev_minor,                                            -- device minor
    c_time_ns // getvariable('blkscope_spike_window_ns') AS win,       -- window number from trace zero
    count(*)                                              AS ios,      -- bios completing in the window
    quantile_disc(lat, 0.99)                              AS p99_ns,   -- their 99th percentile latency
    max(lat)                                              AS max_ns,   -- the slowest of them
    arg_max(c_time_ns, lat)                               AS peak_ns   -- when the slowest completed
FROM (
    SELECT dev_major, dev_minor, c_time_ns,
           CASE getvariable('blkscope_spike_metric') WHEN 'd2c' THEN d2c_ns ELSE q2c_ns END AS lat
    FROM bios
    WHERE NOT partial AND c_time_ns IS NOT NULL
)
WHERE lat IS NOT NULL
GROUP BY ALL
