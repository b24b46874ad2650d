INCLUDE _spike_latencies, exact_quantiles;

-- Per device and window: how many bios completed and their latency percentiles. The p99 is
-- quantile_disc's, by exact_quantiles (no window's latencies held in memory).
CREATE MACRO internal._spike_windows(
    window_ns,  -- the windows' width, ns (windows by completion time, from trace zero)
    metric      -- the judged latency: 'q2c' or 'd2c'
) RETURNS TABLE(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    win BIGINT,         -- window number from trace zero
    ios BIGINT,         -- bios completing in the window
    p99_ns BIGINT,      -- their 99th percentile latency
    max_ns BIGINT,      -- the slowest of them
    peak_ns BIGINT      -- when the slowest completed
) AS TABLE
WITH latencies AS NOT MATERIALIZED (
    -- read three times (here and twice by exact_quantiles), each time from bios
    SELECT * FROM internal._spike_latencies(window_ns, metric)
), agg AS (
    SELECT g, count(*) AS ios, max(v) AS max_ns, arg_max(c_time_ns, v) AS peak_ns
    FROM latencies GROUP BY g
), q AS (
    SELECT g, v AS p99_ns FROM exact_quantiles('latencies', [990])
)
SELECT g.dev_major, g.dev_minor, g.win, ios, p99_ns, max_ns, peak_ns
FROM agg JOIN q USING (g);
