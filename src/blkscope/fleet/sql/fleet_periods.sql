-- Which hosts show which periods, beside the writeback knobs their capture ran with: a period
-- matches the flusher when it is within 10% of vm.dirty_writeback_centisecs (unknown when the
-- capture did not record the knob).
-- SQL that DuckDB and Spark SQL both run.
-- needs: periods, captures
SELECT
    p.host,                                  -- host
    p.capture,                               -- capture id
    p.dev_major,                             -- device major
    p.dev_minor,                             -- device minor
    p.series,                                -- what beats: kworker_writes, jbd2_writes, ...
    p.period_ns,                             -- the period, ns
    p.knobs,                                 -- knobs blkscope matched it to (',' joined)
    p.method,                                -- periodogram or writeback_events
    c.vm_dirty_writeback_centisecs,          -- the knob's value in this capture
    c.vm_dirty_expire_centisecs,             -- the expiry knob's value
    CASE WHEN c.vm_dirty_writeback_centisecs IS NULL THEN NULL
         WHEN c.vm_dirty_writeback_centisecs > 0
              AND abs(p.period_ns - c.vm_dirty_writeback_centisecs * 10000000) * 10
                  <= c.vm_dirty_writeback_centisecs * 10000000
         THEN true ELSE false END AS matches_writeback_knob  -- within 10% of the flusher's interval (null: knob unknown)
FROM periods p
JOIN captures c ON p.host = c.host AND p.capture = c.capture
