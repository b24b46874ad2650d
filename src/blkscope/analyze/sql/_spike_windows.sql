-- Per device and window: how many bios completed and their latency percentiles.
-- Windows are getvariable('blkscope_spike_window_ns') wide, by completion time;
-- the judged latency is getvariable('blkscope_spike_metric'): 'q2c' or 'd2c'.
-- Needs _spike_latencies; the p99 is quantile_disc's, by exact_quantiles (no window's
-- latencies held in memory).
-- needs: _spike_latencies
WITH agg AS (
    SELECT g, count(*) AS ios, max(v) AS max_ns, arg_max(c_time_ns, v) AS peak_ns
    FROM _spike_latencies GROUP BY g
), q AS (
    SELECT g, v AS p99_ns FROM exact_quantiles('_spike_latencies', [990])
)
SELECT
    g.dev_major,                                          -- device major
    g.dev_minor,                                          -- device minor
    g.win,                                                -- window number from trace zero
    ios,                                                  -- bios completing in the window
    p99_ns,                                               -- their 99th percentile latency
    max_ns,                                               -- the slowest of them
    peak_ns                                               -- when the slowest completed
FROM agg JOIN q USING (g)
