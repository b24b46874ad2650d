INCLUDE IF EXISTS writeback;

-- The writeback timeline: one row per writeback work item per device, on the trace timeline.
-- A capture folder often holds the same work items in several logs: blkscope capture's raw
-- tracepoint text `writeback_trace.txt` (monotonic, and the only one that tells the pages a
-- work item wrote), `writeback_ns.txt` (monotonic, only the pages left at the end) and
-- writeback.bt's `writeback.txt` (wall-clock HH:MM:SS, so up to ~1 s off once placed on the
-- trace). A work item is kept once, from the best of them: a row is dropped when a better log
-- (pages written known, then monotonic, then time of day) has a row for the same device and
-- reason, with the same pages left (compared on 16 bits: some logs cut them), within 1 ms
-- (2 s against a time-of-day log). Rows only one log has are kept. Items on a bdi that is not
-- a 'major:minor' device cannot be placed on a device and are left out.
-- Needs the writeback table (a writeback log, placed on the trace timeline at ingest).
CREATE VIEW writeback_events(
    dev_major INTEGER,     -- device major (from the log's DEVICE major:minor)
    dev_minor INTEGER,     -- device minor
    start_ns BIGINT,       -- the work item started (trace ns)
    end_ns BIGINT,         -- it ended: when the log recorded it (trace ns)
    pages_written BIGINT,  -- pages it wrote (nr_pages at start minus at end); null when its log
                           -- printed only the end
    pages_left BIGINT,     -- nr_pages at its end: what it still had to write, as its log printed
                           -- it (not what it wrote)
    reason VARCHAR,        -- why the kernel started it: periodic, background, sync, vmscan,
                           -- fs_free_space, ...
    clock VARCHAR          -- the log's clock: monotonic (exact) or time_of_day (1 s stamps)
) AS
WITH w AS (
    SELECT DISTINCT clock, t_ns, dev_major, dev_minor, pages_left, pages_written, reason,
           duration_ns,
           CASE WHEN pages_written IS NOT NULL THEN 0 WHEN clock = 'monotonic' THEN 1 ELSE 2 END
               AS rank
    FROM writeback
    WHERE t_ns IS NOT NULL AND dev_major IS NOT NULL
), kept AS (
    SELECT w.* FROM w
    WHERE NOT EXISTS (
        SELECT 1 FROM w b
        WHERE b.rank < w.rank AND b.dev_major = w.dev_major AND b.dev_minor = w.dev_minor
          AND b.reason = w.reason AND (b.pages_left & 65535) = (w.pages_left & 65535)
          AND abs(b.t_ns - w.t_ns) <= CASE WHEN w.rank = 2 THEN 2000000000 ELSE 1000000 END)
)
SELECT
    dev_major,
    dev_minor,
    t_ns - duration_ns AS start_ns,
    t_ns               AS end_ns,
    pages_written,
    pages_left,
    reason,
    clock
FROM kept
ORDER BY dev_major, dev_minor, end_ns;
