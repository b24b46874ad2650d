INCLUDE IF EXISTS writeback;

-- The writeback timeline: one row per writeback work item per device, on the trace timeline.
-- A capture folder often holds the same work items in two logs: writeback.bt's `writeback.txt`
-- (wall-clock HH:MM:SS, so up to ~1 s off once placed on the trace) and `writeback_ns.txt`
-- (CLOCK_MONOTONIC ns, exact). A work item is kept once, from the log with the best clock: a
-- time-of-day row is dropped when the monotonic log has a row for the same device, pages and
-- reason within 2 s of it; rows only one log has are kept. Items on a bdi that is not a
-- 'major:minor' device cannot be placed on a device and are left out.
-- Needs the writeback table (a writeback.bt log, placed on the trace timeline at ingest).
CREATE VIEW writeback_events(
    dev_major INTEGER,  -- device major (from the log's DEVICE major:minor)
    dev_minor INTEGER,  -- device minor
    start_ns BIGINT,    -- the work item started (trace ns)
    end_ns BIGINT,      -- it ended: when writeback.bt logged it (trace ns)
    pages BIGINT,       -- pages it wrote
    reason VARCHAR,     -- periodic, background, sync, vmscan, ...
    clock VARCHAR       -- the log's clock: monotonic (exact) or time_of_day (1 s stamps)
) AS
WITH w AS (
    SELECT DISTINCT clock, t_ns, dev_major, dev_minor, pages, reason, duration_ns
    FROM writeback
    WHERE t_ns IS NOT NULL AND dev_major IS NOT NULL
), exact AS (
    SELECT * FROM w WHERE clock = 'monotonic'
), coarse AS (
    SELECT c.* FROM w c
    WHERE c.clock <> 'monotonic' AND NOT EXISTS (
        SELECT 1 FROM exact e
        WHERE e.dev_major = c.dev_major AND e.dev_minor = c.dev_minor AND e.pages = c.pages
          AND e.reason = c.reason AND abs(e.t_ns - c.t_ns) <= 2000000000)
)
SELECT
    dev_major,
    dev_minor,
    t_ns - duration_ns AS start_ns,
    t_ns               AS end_ns,
    pages,
    reason,
    clock
FROM (SELECT * FROM exact UNION ALL SELECT * FROM coarse)
ORDER BY dev_major, dev_minor, end_ns;
