-- The exact in-flight step functions per device, defined once for the `depth` table (time at
-- each depth) and the `depth_bins` table (the same function per time bin): one row per step.
-- level 'driver': requests between D and C (an R takes one back out until its next D; a C
-- whose D came before the trace counts as in flight from the trace start; orphan C's, whose D
-- is missing mid-trace, and bio-based devices' C's, which have no D, are left out).
-- level 'queue': bios between Q and completion (unfinished ones until the trace end).
-- needs: _request_events, bios, events, requests
-- materialize: temp
WITH bounds AS (
    SELECT dev_major, dev_minor, min(time_ns) AS t0, max(time_ns) AS t1 FROM events GROUP BY ALL
), steps AS (
    SELECT dev_major, dev_minor, 'driver' AS level, time_ns AS t,
           CASE WHEN action = 'D' THEN 1 ELSE -1 END AS delta
    FROM _request_events e WHERE NOT is_flush_end AND NOT EXISTS (
        SELECT 1 FROM requests o WHERE o.kind IN ('orphan', 'bio') AND o.c_eid = e.eid)
    UNION ALL
    SELECT r.dev_major, r.dev_minor, 'driver', b.t0, 1
    FROM requests r JOIN bounds b USING (dev_major, dev_minor)
    WHERE r.kind IN ('data', 'flush') AND r.first_d_time_ns IS NULL
    UNION ALL
    SELECT dev_major, dev_minor, level, t0, 0                  -- depth 0 from the trace start
    FROM bounds, (VALUES ('driver'), ('queue')) AS l(level)
    UNION ALL
    SELECT dev_major, dev_minor, 'queue', q_time_ns, 1 FROM bios
    UNION ALL
    SELECT dev_major, dev_minor, 'queue', c_time_ns, -1 FROM bios WHERE c_time_ns IS NOT NULL
), keyed AS (
    -- one integer per (device, level) to partition by: cheaper for DuckDB's window than three
    -- keys, and the window sorts only (k, t, delta): it carries its input rows through the sort
    SELECT dev_major::BIGINT << 33 | dev_minor::BIGINT << 1 | (level = 'queue')::INTEGER AS k,
           t, delta
    FROM steps
), walked AS (
    SELECT k, t, sum(delta) OVER w AS depth, lead(t) OVER w AS next_t
    FROM keyed
    WINDOW w AS (PARTITION BY k ORDER BY t, delta ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
), devices AS (
    SELECT b.*, l.level,
           dev_major::BIGINT << 33 | dev_minor::BIGINT << 1 | (l.level = 'queue')::INTEGER AS k
    FROM bounds b, (VALUES ('driver'), ('queue')) AS l(level)
)
SELECT
    d.dev_major,                                                      -- device major
    d.dev_minor,                                                      -- device minor
    d.level,                                                          -- driver (D..C) or queue (Q..C)
    w.t AS t_ns,                                                      -- the step's time (trace ns)
    w.depth::INTEGER AS depth,                                        -- in flight from t_ns on
    coalesce(w.next_t, d.t1) - w.t AS held_ns                         -- until the next step (or the trace end)
FROM walked w JOIN devices d USING (k)
