INCLUDE _spike_latencies, exact_quantiles;

-- Per device and window: how many bios completed and their latency percentiles.
-- Windows are getvariable('blkscope_spike_window_ns') wide, by completion time;
-- the judged latency is getvariable('blkscope_spike_metric'): 'q2c' or 'd2c'.
-- Needs _spike_latencies; the p99 is quantile_disc's, by exact_quantiles (no window's
-- latencies held in memory).
CREATE VIEW internal._spike_windows(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    win BIGINT,         -- window number from trace zero
    ios BIGINT,         -- bios completing in the window
    p99_ns BIGINT,      -- their 99th percentile latency
    max_ns BIGINT,      -- the slowest of them
    peak_ns BIGINT      -- when the slowest completed
) AS
WITH agg AS (
    SELECT g, count(*) AS ios, max(v) AS max_ns, arg_max(c_time_ns, v) AS peak_ns
    FROM internal._spike_latencies GROUP BY g
), q AS (
    SELECT g, v AS p99_ns FROM exact_quantiles('internal._spike_latencies', [990])
)
SELECT
    g.dev_major,
    g.dev_minor,
    g.win,
    ios,
    p99_ns,
    max_ns,
    peak_ns
FROM agg JOIN q USING (g);
