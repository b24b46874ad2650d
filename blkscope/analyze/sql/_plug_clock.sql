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
           min(time_ns) FILTER (action IN ('Q', 'G')) OVER s AS first_qg,
           bool_or(action = 'P') OVER s AS plugged
    FROM sessions WINDOW s AS (PARTITION BY pid, session)
)
SELECT
    eid,                                                    -- the Q or G event's id
    action,                                                 -- Q or G
    time_ns,                                                -- its time
    CASE WHEN action = 'G' THEN first_qg                    -- a G: its session's first Q/G
         WHEN plugged THEN first_q                          -- a plugged Q: the plug's first Q
         ELSE time_ns END AS clock_ns                       -- else the Q itself
FROM clocks WHERE action IN ('Q', 'G')
