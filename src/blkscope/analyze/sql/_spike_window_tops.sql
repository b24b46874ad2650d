INCLUDE _spike_latencies;

-- _spike_windows from one read of the latencies, for a caller that knows how many of each
-- window's slowest latencies hold its p99: quantile_disc's p99 of n latencies is the
-- (n - ceil(0.99 n) + 1)-th slowest, so keeping that many of each window's slowest finds it
-- exactly. findings.py counts the windows first and keeps _spike_windows (no window's
-- latencies held at all) for when the slowest kept at once would be too many.
CREATE MACRO internal._spike_window_tops(
    window_ns,  -- the windows' width, ns (windows by completion time, from trace zero)
    metric,     -- the judged latency: 'q2c' or 'd2c'
    top         -- how many of each window's slowest latencies to keep: at least
                -- n - ceil(0.99 n) + 1 for the window with the most (n)
) RETURNS TABLE(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    win BIGINT,         -- window number from trace zero
    ios BIGINT,         -- bios completing in the window
    p99_ns BIGINT,      -- their 99th percentile latency
    max_ns BIGINT,      -- the slowest of them
    peak_ns BIGINT      -- when the slowest completed
) AS TABLE
WITH agg AS (
    SELECT g, count(*) AS ios, max(v) AS max_ns, arg_max(c_time_ns, v) AS peak_ns,
           max(v, top) AS slowest  -- descending
    FROM internal._spike_latencies(window_ns, metric) GROUP BY g
)
SELECT g.dev_major, g.dev_minor, g.win, ios, slowest[ios - (ios * 990 + 999) // 1000 + 1] AS p99_ns,
       max_ns, peak_ns
FROM agg;
