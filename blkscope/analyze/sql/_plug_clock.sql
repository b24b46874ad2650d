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
    -- actions as small integers: Q 1, G 2, P 3, U 4, UT 5
    SELECT pid, time_ns, (input_id::BIGINT << 40) + line_no AS eid,
           CASE action WHEN 'Q' THEN 1 WHEN 'G' THEN 2 WHEN 'P' THEN 3 WHEN 'U' THEN 4 ELSE 5 END
             ::UTINYINT AS a
    FROM events WHERE action IN ('Q', 'G', 'P', 'U', 'UT')
), marked AS (
    -- A session starts at a task's first event, after a pause, after a UT, and after a U that
    -- is not a full-plug flush (one followed, past any further U, by the P of the next plug).
    -- One global order rather than PARTITION BY pid: DuckDB runs each window partition on one
    -- thread, and a trace has few pids holding millions of events.
    SELECT pid, time_ns, eid, a, row_number() OVER w AS pos,
           coalesce(lag(pid) OVER w <> pid OR time_ns - lag(time_ns) OVER w > 5000000
                    OR lag(a) OVER w = 5
                    OR (lag(a) OVER w = 4 AND NOT (a = 3 OR (a >= 4 AND lead(a) OVER w = 3
                                                              AND lead(pid) OVER w = pid))),
                    TRUE) AS starts
    FROM ev WINDOW w AS (ORDER BY pid, time_ns, eid)
), sessions AS (
    SELECT m.*, s.pos AS session
    FROM marked m ASOF JOIN (SELECT pos FROM marked WHERE starts) s ON m.pos >= s.pos
), agg AS (
    SELECT session, min(time_ns) FILTER (a = 1) AS first_q,
           min(time_ns) FILTER (a <= 2) AS first_qg, bool_or(a = 3) AS plugged
    FROM sessions GROUP BY session
)
SELECT
    eid,                                                    -- the Q or G event's id
    CASE a WHEN 1 THEN 'Q' ELSE 'G' END AS action,          -- Q or G
    time_ns,                                                -- its time
    CASE WHEN a = 2 THEN first_qg                           -- a G: its session's first Q/G
         WHEN plugged THEN first_q                          -- a plugged Q: the plug's first Q
         ELSE time_ns END AS clock_ns                       -- else the Q itself
FROM sessions JOIN agg USING (session) WHERE a <= 2
