-- Intervals when kernel writeback was working, on the trace timeline, per device: each work
-- item of the writeback timeline (writeback_events: one row per item, the best clock's).
-- Without a writeback log, correlation.writeback_intervals falls back to flusher-write bursts.
-- needs: writeback_events
SELECT
    dev_major,                              -- device major
    dev_minor,                              -- device minor
    start_ns,                               -- writeback work started
    end_ns,                                 -- writeback work ended
    'writeback.bt'     AS source            -- where the interval comes from
FROM writeback_events
