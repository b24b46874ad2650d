INCLUDE writeback_events;

-- Intervals when kernel writeback was working, on the trace timeline, per device: each work
-- item of the writeback timeline (writeback_events: one row per item, the best clock's).
-- Without a writeback log, correlation.writeback_intervals falls back to flusher-write bursts.
CREATE VIEW internal._writeback_windows(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    start_ns BIGINT,    -- writeback work started
    end_ns BIGINT,      -- writeback work ended
    source VARCHAR      -- where the interval comes from
) AS
SELECT
    dev_major,
    dev_minor,
    start_ns,
    end_ns,
    'writeback.bt'     AS source
FROM writeback_events;
