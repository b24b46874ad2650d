-- The clock the kernel's disk statistics (iostat's await, aqu-sz) start each bio on. Since
-- Linux 6.9 blk_time_get_ns() caches the first time read inside a plug (plug->cur_ktime) and
-- hands that same value to every request allocated until the cache is cleared, which happens
-- only when the plug is flushed at blk_finish_plug or when the task schedules (U / UT), not
-- when blk_add_rq_to_plug flushes a full plug (U followed by P for the next request). So a
-- writeback kworker's whole plug of requests starts at its FIRST Q: measured against 5 ms
-- samples of /sys/block/vda/stat, Q..C alone missed 25.7 ms of 236 ms in one flusher burst.
-- A task that sleeps with an empty plug clears the cache without a trace event: a pause of
-- more than 5 ms between its events is taken as such a sleep. A task that slept between a
-- bio's Q and its request's G (throttled, or waiting for a tag: 263 ms under bfq) starts the
-- request's clock after waking, so each G also gets the clock of its own session.
WITH ev AS (
    SELECT pid, time_ns, action, (input_id::BIGINT << 40) + line_no AS eid
    FROM events WHERE action IN ('Q', 'G', 'P', 'U', 'UT')
), marked AS (
    SELECT *,
           action = 'UT' OR (action = 'U' AND NOT coalesce(
               (lead(pid) OVER w = pid AND lead(action) OVER w = 'P')
               OR (lead(pid, 2) OVER w = pid AND lead(action) OVER w IN ('U', 'UT')
                   AND lead(action, 2) OVER w = 'P'), FALSE)) AS clears,
           coalesce(lag(pid) OVER w <> pid OR time_ns - lag(time_ns) OVER w > 5000000, TRUE)
             AS slept
    -- one global order rather than PARTITION BY pid: DuckDB runs each window partition on one
    -- thread, and a trace has few pids holding millions of events
    FROM ev WINDOW w AS (ORDER BY pid, time_ns, eid)
), sessions AS (
    SELECT *, sum(slept::INTEGER) OVER (ORDER BY pid, time_ns, eid ROWS UNBOUNDED PRECEDING)
              + coalesce(sum(clears::INTEGER) OVER (ORDER BY pid, time_ns, eid
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS session
    FROM marked
), agg AS (
    SELECT session, min(time_ns) FILTER (action = 'Q') AS first_q,
           min(time_ns) FILTER (action IN ('Q', 'G')) AS first_qg,
           bool_or(action = 'P') AS plugged
    FROM sessions GROUP BY session
)
SELECT
    eid,                                                    -- the Q or G event's id
    action,                                                 -- Q or G
    time_ns,                                                -- its time
    CASE WHEN action = 'G' THEN first_qg                    -- a G: its session's first Q/G
         WHEN plugged THEN first_q                          -- a plugged Q: the plug's first Q
         ELSE time_ns END AS clock_ns                       -- else the Q itself
FROM sessions JOIN agg USING (session) WHERE action IN ('Q', 'G')
