-- The clock the kernel's disk statistics (iostat's await, aqu-sz) start each bio on. Since
-- Linux 6.9 blk_time_get_ns() caches the first time read inside a plug (plug->cur_ktime) and
-- hands that same value to every request allocated until the cache is cleared, which happens
-- only when the plug is flushed at blk_finish_plug or when the task schedules (U / UT), not
-- when blk_add_rq_to_plug flushes a full plug (U followed by P for the next request). So a
-- writeback kworker's whole plug of requests starts at its FIRST Q: measured against 5 ms
-- samples of /sys/block/vda/stat, Q..C alone missed 25.7 ms of 236 ms in one flusher burst.
-- A task that sleeps with an empty plug clears the cache without a trace event: a pause of
-- more than 5 ms between its events is taken as such a sleep. Queues with no P in the session
-- were not plugged, and start at their own Q.
WITH ev AS (
    SELECT pid, time_ns, action, (input_id::BIGINT << 40) + line_no AS eid
    FROM events WHERE action IN ('Q', 'G', 'P', 'U', 'UT')
), marked AS (
    SELECT *,
           action = 'UT' OR (action = 'U' AND NOT coalesce(lead(action) OVER w = 'P'
               OR (lead(action) OVER w IN ('U', 'UT') AND lead(action, 2) OVER w = 'P'),
               FALSE)) AS clears,
           coalesce(time_ns - lag(time_ns) OVER w > 5000000, TRUE) AS slept
    FROM ev WINDOW w AS (PARTITION BY pid ORDER BY time_ns, eid)
), sessions AS (
    SELECT *, sum(slept::INTEGER) OVER w + sum(clears::INTEGER) OVER w - clears::INTEGER AS session
    FROM marked WINDOW w AS (PARTITION BY pid ORDER BY time_ns, eid ROWS UNBOUNDED PRECEDING)
), clocks AS (
    SELECT *, min(time_ns) FILTER (action = 'Q') OVER s AS first_q,
           bool_or(action = 'P') OVER s AS plugged
    FROM sessions WINDOW s AS (PARTITION BY pid, session)
)
SELECT
    eid AS q_eid,                                           -- the Q event's id
    time_ns AS q_time_ns,                                   -- its time
    CASE WHEN plugged THEN first_q ELSE time_ns END AS clock_ns  -- the stats clock's start
FROM clocks WHERE action = 'Q'
