-- Intervals when kernel writeback was working, on the trace timeline, per device.
-- From writeback.bt events when the capture has them (each item ran duration_ns up to t_ns),
-- else from the span of each burst of flusher-thread (kworker/u*, flush-*) bios.
-- A capture folder may hold the same work items twice (writeback.txt, 1 s stamps, and
-- writeback_ns.txt, exact): only the exact log is used then, so nothing is counted twice.
SELECT
    dev_major,                              -- device major
    dev_minor,                              -- device minor
    t_ns - duration_ns AS start_ns,         -- writeback work started
    t_ns               AS end_ns,           -- writeback work ended
    'writeback.bt'     AS source            -- where the interval comes from
FROM writeback
WHERE t_ns IS NOT NULL AND dev_major IS NOT NULL
    AND clock = (
        SELECT CASE WHEN bool_or(clock = 'monotonic') THEN 'monotonic' ELSE 'time_of_day' END
        FROM writeback WHERE t_ns IS NOT NULL
    )
